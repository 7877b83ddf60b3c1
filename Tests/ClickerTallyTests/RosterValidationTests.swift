import struct ClickerTransport.SplitMix64
import ClickerTally
import ClickerWire
import XCTest

/// Names and student IDs that are blank or hold a NUL byte are refused with their line.
final class RosterValidationTests: XCTestCase {
    let codes: [EnrollmentCode] = {
        var rng = SplitMix64(seed: 43)
        return (0..<3).map { _ in DeviceKey.generate(using: &rng).enrollmentCode }
    }()

    func error(_ csv: String) -> RosterError? {
        do { _ = try Roster(csv: csv); return nil } catch { return error }
    }

    func testBlankNamesAndIDsAreRefused() {
        let ok = "Ada,s1,\(codes[0])\n"
        XCTAssertEqual(error(ok + "\"   \",s2,\(codes[1])"), RosterError(line: 2, problem: .emptyName))
        XCTAssertEqual(error(ok + "\"\t \",s2,\(codes[1])"), RosterError(line: 2, problem: .emptyName))
        XCTAssertEqual(error(ok + "Bob,\"  \",\(codes[1])"), RosterError(line: 2, problem: .emptyStudentID))
        XCTAssertEqual(error(ok + "Bob,\u{00A0}\u{2003},\(codes[1])"), RosterError(line: 2, problem: .emptyStudentID),
                       "no-break and em spaces are blank too")
        XCTAssertNil(error(ok))
    }

    /// NUL bytes are refused; other control characters stay, neutralised wherever a name is shown
    /// (`PollControllerTests.testHostileRosterNamesAreNeutralisedInTheExportAndTheListing`).
    func testNulBytesAreRefused() {
        let ok = "Ada,s1,\(codes[0])\n"
        XCTAssertEqual(error(ok + "Bo\u{0}b,s2,\(codes[1])"), RosterError(line: 2, problem: .nulByte(field: "name")))
        XCTAssertEqual(error(ok + "Bob,s\u{0}2,\(codes[1])"), RosterError(line: 2, problem: .nulByte(field: "student ID")))
        XCTAssertEqual(RosterError(line: 2, problem: .nulByte(field: "name")).description, "roster line 2: the name holds a NUL byte")
        // Entries from the store are checked alike.
        XCTAssertThrowsError(try Roster(entries: [RosterEntry(name: "A\u{0}", studentID: "s1", enrollment: codes[0])]))
    }

    /// The checks of a row take constant time: the 20,000th duplicate is found as the 2nd is
    /// (a linear scan per row made 8,000 rows take 19 s). The figure is the RosterImport benchmark's.
    func testADuplicateFarDownIsNamedWithTheLineOfTheFirst() {
        var rng = SplitMix64(seed: 44)
        var rows = (0..<20_000).map { i in "S \(i),s\(i),\(DeviceKey.generate(using: &rng).enrollmentCode)" }
        rows.append("Again,s17,\(codes[2])")
        XCTAssertEqual(error(rows.joined(separator: "\n")),
                       RosterError(line: 20_001, problem: .duplicateStudentID("s17", firstSeenAt: 18)))
    }
}
