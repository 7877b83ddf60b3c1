import BlueZ
import ClickerTally
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import XCTest

/// Tier 2: sealed ballots advertised through the fake bluetoothd come out of the central as reports
/// that ClickerWire verifies and ClickerTally counts.
final class BlueZTallyTests: XCTestCase {
    func testSealedBallotsAreReportedVerifiedAndTallied() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let mock = try await BlueZMock(bus: bus)
        defer { mock.kill() }
        try await mock.addAdapter()
        let central = BlueZCentral(options: BlueZCentralOptions(bus: bus.target, discoveryRestartInterval: nil,
                                                                staleDeviceTimeout: nil))
        let status = Collector(central.status())
        let reports = Collector(central.advertisements(companyID: BallotFormat.companyID))
        try await status.wait("scanning") { $0.last?.state == .scanning }

        let code = try JoinCode(voteID: 0x0A11, secret: 0x1_2345_6789_ABCD)
        let letters: [Character] = ["A", "B", "C", "A", "B", "A", "D", "A", "C", "B", "A", "D"]
        var sealers: [(String, BallotSealer)] = []
        for (i, letter) in letters.enumerated() {
            let keyBytes = (0..<32).map { UInt8(truncatingIfNeeded: i &* 29 &+ $0 &* 3 &+ 5) }
            let key = try XCTUnwrap(DeviceKey(bytes: keyBytes))
            let sealer = BallotSealer(secret: pollSecret(code), deviceKey: key)
            let address = String(format: "00:AA:04:00:00:%02X", i + 1)
            sealers.append((address, sealer))
            try await mock.addDevice(address)
            let answer = try XCTUnwrap(Answer.letter(letter))
            try await mock.advertise(address, data: sealer.advertisement(question: 1, sequence: 1, answer: answer))
        }
        // Voter 0 changes from A to D; a forger replays voter 1's ballot with one byte flipped.
        try await mock.advertise(sealers[0].0, data: sealers[0].1.advertisement(question: 1, sequence: 2,
                                                                                 answer: try XCTUnwrap(Answer.letter("D"))))
        var forged = sealers[1].1.advertisement(question: 1, sequence: 3, answer: try XCTUnwrap(Answer.letter("C")))
        forged[forged.count - 1] ^= 0x01
        try await mock.addDevice("00:AA:04:00:00:FF")
        try await mock.advertise("00:AA:04:00:00:FF", data: forged)

        let got = try await reports.wait("all ballots") { $0.count == letters.count + 2 }
        var pipeline = IngestPipeline(secret: pollSecret(code))
        pipeline.tally.open(QuestionSpec(number: 1, options: 4))
        var verified = 0
        for r in got where pipeline.ingest(r).ballot != nil { verified += 1 }
        XCTAssertEqual(verified, letters.count + 1, "the forged ballot must not verify")
        let results = try XCTUnwrap(pipeline.tally.results(question: 1))
        XCTAssertEqual(results.voters, letters.count)
        // Initially A×5 B×3 C×2 D×2; voter 0 moved A → D.
        XCTAssertEqual(results.countTable[try XCTUnwrap(Answer.letter("A"))], 4)
        XCTAssertEqual(results.countTable[try XCTUnwrap(Answer.letter("B"))], 3)
        XCTAssertEqual(results.countTable[try XCTUnwrap(Answer.letter("C"))], 2)
        XCTAssertEqual(results.countTable[try XCTUnwrap(Answer.letter("D"))], 3)
        await central.shutdown()
    }
}
