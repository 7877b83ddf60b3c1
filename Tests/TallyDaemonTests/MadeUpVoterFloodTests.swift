#if canImport(Glibc)
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Glibc
@testable import TallyDaemon
import XCTest

/// Attack #7 of the security review: made-up voters (anonymous polls) and unregistered ballots (roster
/// polls), each a new voter ID from a new address, at the most reports a scanner delivers on one
/// channel (2,800 a second: PDUs of 360 µs back to back) for five minutes on the report clock. The
/// poll keeps at most `Tally.Limits` voters; the real voters who voted before the flood keep their
/// ballots, the made-up ones beyond the limit are counted as `voterLimit`, and the process stays far
/// under the unit's `MemoryMax=`.
final class MadeUpVoterFloodTests: XCTestCase {
    static let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    static let secret = pollSecret(code)
    static let reportsPerSecond = 2800
    static let seconds = 300
    static let realVoters: UInt32 = 50

    static func report(voter: UInt32, answer: Answer, ns: UInt64) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: 1, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: 0xD000_0000_0000 | UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(secret)),
                                   timestamp: RadioInstant(nanoseconds: ns))
    }

    /// Real voters first, then the flood, a tenth of a second of reports per actor turn (as a radio
    /// hands over its batches). Returns the largest footprint seen.
    static func flood(_ controller: PollController, real: [AdvertisementReport]) async -> PollFootprint {
        await controller.ingestAll(real)
        let perBatch = reportsPerSecond / 10, start: UInt64 = 1_000_000_000
        var next: UInt32 = 0x4000_0000
        var largest = await controller.footprint
        for batch in 0..<(seconds * 10) {
            var reports: [AdvertisementReport] = []
            reports.reserveCapacity(perBatch)
            for i in 0..<perBatch {
                let ns = start + UInt64(batch * perBatch + i) * 1_000_000_000 / UInt64(reportsPerSecond)
                reports.append(report(voter: next, answer: .choice(UInt8(next % 4)), ns: ns))
                next &+= 1
            }
            await controller.ingestAll(reports)
            if batch % 100 == 99 {
                let f = await controller.footprint
                if f.tallyVoters + f.committed > largest.tallyVoters + largest.committed { largest = f }
            }
        }
        return largest
    }

    static func realReports() -> [AdvertisementReport] {
        (0..<realVoters).map { report(voter: 0x0100_0000 + $0, answer: .choice(UInt8($0 % 4)), ns: UInt64($0) * 1_000_000) }
    }

    static var flooded: Int { reportsPerSecond * seconds }

    func store() throws -> ClickerStore {
        let dir = NSTemporaryDirectory() + "clicker-flood-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return try ClickerStore(path: dir + "/db.sqlite", durability: .normal)
    }

    /// Anonymous poll: 840,000 made-up voters. The question holds the limit's voters, the 50 real ones
    /// among them with their answers; every made-up voter beyond it is one `voterLimit` rejection.
    func testMadeUpVotersAtAScannersRateForFiveMinutesStayWithinTheLimit() async throws {
        try Self.requireChild("anonymous")
        let limit = Tally.Limits().votersPerQuestion
        let controller = try PollController(options: PollOptions(joinCode: Self.code, confirmByGATT: false), store: try store())
        let largest = await Self.flood(controller, real: Self.realReports())
        let end = await controller.footprint
        let r = await controller.results()
        XCTAssertEqual(r.voters, limit, "the question holds as many voters as the limit")
        XCTAssertLessThanOrEqual(largest.tallyVoters, limit)
        XCTAssertLessThanOrEqual(largest.committed, limit)
        XCTAssertEqual(end.tallyVoters, limit)
        XCTAssertEqual(r.rejected["voterLimit"], Self.flooded - (limit - Int(Self.realVoters)), "\(r.rejected)")
        for v in 0..<Self.realVoters {
            let ballot = r.ballots.first { $0.voter == IDText.voter(0x0100_0000 + v) }
            XCTAssertEqual(ballot?.answer, Answer.choice(UInt8(v % 4)).description, "real voter \(v) keeps its ballot")
        }
        XCTAssertLessThanOrEqual(end.ingest.goodCache, FloodPolicy().goodCacheLimit)
        XCTAssertLessThanOrEqual(end.ingest.rateLimitedAddresses, FloodPolicy().addressLimit)
        XCTAssertLessThanOrEqual(end.pendingRejections, Rejection.allCases.count)
        print("anonymous flood: \(Self.flooded) made-up voters, footprint at the end \(end)")
    }

    /// Roster poll: the same flood of anonymous ballots is kept apart as unregistered, at most the
    /// poll's limit of them; the enrolled student's ballot counts.
    func testUnregisteredBallotsAtAScannersRateForFiveMinutesStayWithinTheLimit() async throws {
        try Self.requireChild("roster")
        let ada = DeviceKey.generate()
        let roster = try Roster(entries: [RosterEntry(name: "Ada", studentID: "s1", enrollment: ada.enrollmentCode)])
        let controller = try PollController(options: PollOptions(joinCode: Self.code, roster: roster, confirmByGATT: false),
                                            store: try store())
        let sealer = BallotSealer(secret: Self.secret, deviceKey: ada, mode: .roster)
        let adaReport = AdvertisementReport(address: DeviceAddress(rawValue: 0xA), rssi: -60, companyID: BallotFormat.companyID,
                                            data: sealer.advertisement(question: 1, sequence: 1, answer: .choice(2)),
                                            timestamp: .zero)
        let largest = await Self.flood(controller, real: [adaReport])
        let limit = Tally.Limits().unregistered
        let r = await controller.results()
        XCTAssertEqual(r.voters, 1)
        XCTAssertEqual(r.counts["C"], 1)
        XCTAssertEqual(r.unregistered, limit)
        XCTAssertLessThanOrEqual(largest.tallyVoters, 1 + limit)
        XCTAssertEqual(r.rejected["voterLimit"], Self.flooded - limit, "\(r.rejected)")
        print("roster flood: \(Self.flooded) unregistered ballots, footprint \(await controller.footprint)")
    }

    // MARK: Resident memory, in a child process

    static let childVariable = "CLICKER_FLOOD_CHILD"

    /// The floods run in a child process each (`testResidentMemoryUnderTheFloodStaysUnderTheUnitsMemoryMax`).
    static func requireChild(_ poll: String) throws {
        guard let v = getenv(childVariable), String(cString: v) == poll else {
            throw XCTSkip("runs in a child process started by testResidentMemoryUnderTheFloodStaysUnderTheUnitsMemoryMax")
        }
    }

    /// Both floods, each in a process of its own: the peak resident memory (VmHWM) of the whole test
    /// process (a debug build) stays under the unit's `MemoryMax=`.
    func testResidentMemoryUnderTheFloodStaysUnderTheUnitsMemoryMax() throws {
        guard getenv(Self.childVariable) == nil else { throw XCTSkip("the parent's test") }
        let memoryMax = try Self.unitMemoryMax()
        for poll in ["anonymous", "roster"] {
            let test = poll == "anonymous" ? "testMadeUpVotersAtAScannersRateForFiveMinutesStayWithinTheLimit"
                : "testUnregisteredBallotsAtAScannersRateForFiveMinutesStayWithinTheLimit"
            let log = NSTemporaryDirectory() + "clicker-flood-\(poll)-\(getpid()).log"
            defer { unlink(log) }
            let pid = try ChildTestProcess.spawn("TallyDaemonTests.MadeUpVoterFloodTests/\(test)",
                                                 environment: ["\(Self.childVariable)=\(poll)"], output: log)
            var status: Int32 = 0
            XCTAssertEqual(waitpid(pid, &status, 0), pid)
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            let errors = output.split(separator: "\n").filter { $0.contains("error") }.joined(separator: "\n")
            XCTAssertEqual(status, 0, "\(poll): the flood failed in its process:\n\(errors)")
            XCTAssertTrue(output.contains("\(test)' passed"), "\(poll): the flood ran and passed")
            let peak = try XCTUnwrap(Self.kilobytes("peak", in: output), "\(poll): the child reports its peak")
            print("\(poll) flood: peak resident \(peak / 1024) MiB, the unit's MemoryMax= \(memoryMax / 1024) MiB")
            XCTAssertLessThan(peak, memoryMax, "\(poll): peak resident memory \(peak) kB")
        }
    }

    override func tearDown() {
        // The child reports its peak resident memory for the parent.
        if getenv(Self.childVariable) != nil, let hwm = Self.status("VmHWM") { print("peak \(hwm) kB") }
        super.tearDown()
    }

    /// A field of /proc/self/status, in kB.
    static func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        return kilobytes(field + ":", in: text)
    }

    static func kilobytes(_ label: String, in text: String) -> Int? {
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ", omittingEmptySubsequences: true).flatMap { $0.split(separator: "\t") }
            if let i = words.firstIndex(where: { $0 == label }), i + 1 < words.count, let n = Int(words[i + 1]) { return n }
        }
        return nil
    }

    /// `MemoryMax=` of systemd/clicker-tally.service, in kB.
    static func unitMemoryMax(file: String = #filePath) throws -> Int {
        let root = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let unit = try String(contentsOf: root.appendingPathComponent("systemd/clicker-tally.service"), encoding: .utf8)
        guard let line = unit.split(separator: "\n").first(where: { $0.hasPrefix("MemoryMax=") }) else {
            throw XCTSkip("the unit sets no MemoryMax=")
        }
        var value = line.dropFirst("MemoryMax=".count)
        let unitScale: [Character: Int] = ["K": 1, "M": 1024, "G": 1024 * 1024]
        var scale = 1
        if let last = value.last, let s = unitScale[last] { scale = s; value = value.dropLast() } else { scale = 0 }
        guard let n = Int(value) else { throw XCTSkip("MemoryMax=\(value)") }
        return scale == 0 ? n / 1024 : n * scale
    }
}

extension PollController {
    /// Tallies `reports` in one actor turn, as `run(central:)` does with a radio's batch.
    func ingestAll(_ reports: [AdvertisementReport]) {
        for r in reports { ingest(r) }
    }
}
#endif
