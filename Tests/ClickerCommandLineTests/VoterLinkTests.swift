import Foundation
import XCTest

/// `clicker-vote` must not link Foundation: students install it on small boards, and Foundation brings
/// ICU with it (43 MB of a statically linked binary: docs/PERFORMANCE.md, "Binary size"). One `import Foundation`
/// in any module the voter links, or in a dependency of one, is enough to bring it back.
///
/// The test build links the Swift runtime dynamically, so what each module imports shows as a shared
/// library the binary needs (`DT_NEEDED`): the same modules that a static release build pulls in.
final class VoterLinkTests: XCTestCase {
    /// The executable `name`, beside the test bundle in the build directory.
    func executable(_ name: String) throws -> String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") } ?? "/proc/self/exe")
            .resolvingSymlinksInPath()
        let path = bundle.deletingLastPathComponent().appendingPathComponent(name).path
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: path), "\(name) not built (swift build --build-tests)")
        return path
    }

    /// The libraries `path` needs, as `readelf -d` lists them.
    func neededLibraries(_ path: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/readelf")
        process.arguments = ["-d", path]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "readelf -d \(path)")
        // " 0x0000000000000001 (NEEDED)             Shared library: [libdbus-1.so.3]"
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard line.contains("(NEEDED)"), let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]"),
                  open < close else { return nil }
            return String(line[line.index(after: open)..<close])
        }
    }

    /// libpq and what it brings (OpenSSL, GnuTLS, Kerberos, LDAP) are loaded only by a tally that uses
    /// the ledger (CLibPQLoader): not one of them is a library the tally needs to start.
    /// (`ReceiverCommandTests` runs the ledger commands of the same binary against a real server.)
    func testTheTallyLinksNoPostgreSQLClient() throws {
        let needed = try neededLibraries(try executable("clicker-tally"))
        XCTAssertTrue(needed.contains("libdbus-1.so.3"), "expected the tally's libraries: \(needed)")
        for library in ["libpq.so.5", "libssl.so.3", "libcrypto.so.3", "libgssapi_krb5.so.2", "libldap-2.5.so.0"] {
            XCTAssertFalse(needed.contains(library), "clicker-tally links \(library)")
        }
    }

    func testTheVoterLinksNeitherFoundationNorICU() throws {
        let voter = try executable("clicker-vote")
        let needed = try neededLibraries(voter)
        // The runtime is really linked dynamically here, or the check below would prove nothing.
        XCTAssertTrue(needed.contains("libswiftCore.so"), "expected a dynamically linked test build: \(needed)")
        for library in ["libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so", "libCoreFoundation.so"] {
            XCTAssertFalse(needed.contains(library),
                           "clicker-vote links \(library): a module it links imports Foundation instead of FoundationEssentials")
        }
    }

    /// The check can see Foundation where it is: the tally links it (through GRDB).
    func testTheCheckSeesFoundationInTheTally() throws {
        let tally = try executable("clicker-tally")
        XCTAssertTrue(try neededLibraries(tally).contains("libFoundation.so"))
    }
}
