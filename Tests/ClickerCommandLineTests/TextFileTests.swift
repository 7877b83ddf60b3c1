import ClickerCommandLine
import Foundation
import Glibc
import XCTest

/// Text files named on the command line: only regular files, bounded, UTF-8 with the line of the
/// first byte that is not.
final class TextFileTests: XCTestCase {
    func testWhatIsNotARegularFileIsNamed() throws {
        let dir = NSTemporaryDirectory() + "clicker-text-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        XCTAssertEqual(mkfifo(dir + "/fifo", 0o600), 0)
        func refusal(_ path: String, limit: Int = TextFile.defaultLimit) -> TextFile.Refusal? {
            do { _ = try TextFile.read(path, limit: limit); return nil } catch { return error }
        }
        XCTAssertEqual(refusal("/dev/zero"), .notRegular(kind: "a character device"))
        XCTAssertEqual(refusal(dir + "/fifo"), .notRegular(kind: "a FIFO (named pipe)"))
        XCTAssertEqual(refusal(dir), .directory)
        XCTAssertEqual(refusal(dir + "/none"), .system(String(cString: strerror(ENOENT))))
        try Data(repeating: 0x41, count: 2000).write(to: URL(fileURLWithPath: dir + "/big"))
        XCTAssertEqual(refusal(dir + "/big", limit: 1000), .tooLarge(bytes: 2000, limit: 1000))
        try "ok\nbien sûr\n".write(toFile: dir + "/good", atomically: true, encoding: .utf8)
        XCTAssertEqual(try TextFile.read(dir + "/good"), "ok\nbien sûr\n")
    }

    func testBytesThatAreNotUTF8AreRefusedWithTheirLine() {
        func refusal(_ bytes: [UInt8]) -> TextFile.Refusal? {
            do { _ = try TextFile.text(bytes); return nil } catch { return error }
        }
        XCTAssertEqual(refusal(Array("a\nbc".utf8) + [0xE9] + Array("\n".utf8)), .notUTF8(line: 2, column: 3, byte: 0xE9))
        XCTAssertEqual(refusal([0xC0, 0x80]), .notUTF8(line: 1, column: 1, byte: 0xC0), "an overlong NUL")
        XCTAssertEqual(refusal([0xED, 0xA0, 0x80]), .notUTF8(line: 1, column: 1, byte: 0xED), "a surrogate")
        XCTAssertEqual(refusal([0xF4, 0x90, 0x80, 0x80]), .notUTF8(line: 1, column: 1, byte: 0xF4), "above U+10FFFF")
        XCTAssertEqual(refusal(Array("x\ny\nab".utf8) + [0, 0x41]), .nul(line: 3, column: 3))
        XCTAssertEqual(refusal(Array("é€😀".utf8)), nil)
        XCTAssertEqual(TextFile.Refusal.notUTF8(line: 4, column: 2, byte: 0xE9).line, 4)
    }
}
