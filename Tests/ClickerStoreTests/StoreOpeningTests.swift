@testable import ClickerStore
import Foundation
import XCTest

/// Where a store may be created, and one tally per database.
final class StoreOpeningTests: XCTestCase {
    /// `--db /nonexistent/dir/x.sqlite` used to create the directories silently.
    func testAnExplicitPathInAMissingDirectoryIsAnErrorAndCreatesNothing() throws {
        let dir = try makeTempDir(self)
        XCTAssertThrowsError(try ClickerStore(path: dir + "/missing/sub/x.sqlite")) { error in
            XCTAssertEqual(error as? StoreError,
                           .noDirectory(path: dir + "/missing/sub/x.sqlite", directory: dir + "/missing/sub"))
            XCTAssertTrue("\(error)".contains("does not exist"), "\(error)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/missing"))
        // A file where the directory should be is refused the same way.
        _ = FileManager.default.createFile(atPath: dir + "/plain", contents: Data())
        XCTAssertThrowsError(try ClickerStore(path: dir + "/plain/x.sqlite"))
    }

    /// The default location is the one place whose directories are made (0700).
    func testTheDefaultLocationIsCreated() throws {
        let dir = try makeTempDir(self)
        let store = try ClickerStore(environment: ["XDG_STATE_HOME": dir + "/state"])
        XCTAssertEqual(store.path, dir + "/state/clicker/clicker.sqlite")
        let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: dir + "/state/clicker")[.posixPermissions] as? Int)
        XCTAssertEqual(mode, 0o700)
    }

    /// Two tallies on one database: the second is refused, naming the first, until the first ends.
    func testASecondExclusiveStoreOnOnePathIsRefused() throws {
        let path = try makeTempDir(self) + "/clicker.sqlite"
        var first: ClickerStore? = try ClickerStore(path: path, exclusive: true)
        XCTAssertNotNil(first)
        XCTAssertThrowsError(try ClickerStore(path: path, exclusive: true)) { error in
            guard case .inUse(let p, let holder)? = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertEqual(p, path)
            XCTAssertEqual(holder?.split(separator: " ").first.map(String.init), String(getpid()), "names the holder's process")
            XCTAssertTrue("\(error)".contains("in use by another tally"), "\(error)")
        }
        // Roster commands (not exclusive) still open it while a tally runs.
        XCTAssertNoThrow(try ClickerStore(path: path).roster())
        first = nil
        XCTAssertNoThrow(try ClickerStore(path: path, exclusive: true), "the lock goes with the store that held it")
    }
}
