import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import Foundation
import ProjectorPage
import ProjectorTestSupport
import ProjectorWeb
import TallyDaemon
import XCTest

/// Neither the JSON endpoint nor the event stream carries a per-voter row, a voter ID, an address or
/// (in a roster poll) a student's name or student ID.
final class ProjectorPrivacyTests: XCTestCase {
    func testRosterPollPayloadsCarryNoVoterIDNameOrAddress() async throws {
        let ada = DeviceKey.generate(), alan = DeviceKey.generate(), grace = DeviceKey.generate()
        let roster = try Roster(entries: [
            RosterEntry(name: "Ada Lovelace", studentID: "s1017", enrollment: ada.enrollmentCode),
            RosterEntry(name: "Alan Turing", studentID: "s2029", enrollment: alan.enrollmentCode),
            RosterEntry(name: "Grace Hopper", studentID: "s3031", enrollment: grace.enrollmentCode),
        ])
        let controller = try perBallotPoll(roster: roster)
        let server = try await ProjectorServer.start(controller: controller, address: ProjectorAddress(port: 0), token: nil)
        addTeardownBlock { await server.stop() }
        var events = try await EventReader(port: server.address.port)
        // A roster poll hides its counts while open; the instructor shows them.
        await controller.setCountsShown(true)
        var forbidden: [String] = [], voterIDs: [String] = []
        for (i, (key, answer)) in [(ada, Answer.choice(0)), (alan, .choice(2)), (grace, .choice(2))].enumerated() {
            let sealer = BallotSealer(secret: pollSecret(testCode), deviceKey: key, mode: .roster)
            let address = DeviceAddress(rawValue: 0xD000_0000_0000 | UInt64(i + 1))
            voterIDs.append(IDText.voter(sealer.voterID))
            forbidden += [IDText.voter(sealer.voterID), String(sealer.voterID), address.description]
            await controller.ingest(AdvertisementReport(address: address, rssi: -50, companyID: BallotFormat.companyID,
                                                        data: sealer.advertisement(question: 1, sequence: 1, answer: answer),
                                                        timestamp: .zero))
        }
        forbidden += ["Ada", "Lovelace", "Alan", "Turing", "Grace", "Hopper", "s1017", "s2029", "s3031"]
        // The controller itself knows them (so the check below can fail).
        let rows = await controller.results()
        XCTAssertEqual(Set(rows.ballots.map(\.voter)), Set(voterIDs))
        XCTAssertTrue(rows.ballots.contains { $0.student == "Ada Lovelace (s1017)" })

        let (open, _) = try await events.snapshot { $0.voters == 3 && !$0.hidden }
        XCTAssertEqual(open.results?.bars.map(\.count), [1, 0, 2, 0])
        XCTAssertTrue(open.roster)
        XCTAssertTrue(open.howToVote.contains("--roster"))
        try await controller.closeQuestion()
        _ = try await events.snapshot { $0.state == .closed }
        let json = try await HTTPTestClient.fetch(port: server.address.port, path: "/results.json")
        let page = try await HTTPTestClient.fetch(port: server.address.port, path: "/")
        await events.stream.close()
        let payloads = [("events", String(decoding: events.received, as: UTF8.self)), ("results.json", json.text),
                        ("page", page.text)]
        for (name, text) in payloads {
            for f in forbidden { XCTAssertFalse(text.contains(f), "\(name) carries \(f)") }
            XCTAssertFalse(text.contains("\"ballots\""), name)
            XCTAssertFalse(text.contains("\"voter\""), name)
        }
    }

    func testAnonymousPollPayloadsCarryNoVoterID() async throws {
        let controller = try perBallotPoll()
        let server = try await ProjectorServer.start(controller: controller, address: ProjectorAddress(port: 0), token: nil)
        addTeardownBlock { await server.stop() }
        var events = try await EventReader(port: server.address.port)
        let voters: [UInt32] = [0x1234_ABCD, 0x0BAD_F00D, 0x7777_1111]
        for v in voters { await controller.ingest(anonymousReport(voter: v, answer: .choice(1))) }
        let listed = await controller.results().ballots.count
        XCTAssertEqual(listed, 3, "the controller lists them while open")
        _ = try await events.snapshot { $0.voters == 3 }
        let json = try await HTTPTestClient.fetch(port: server.address.port, path: "/results.json")
        await events.stream.close()
        for text in [String(decoding: events.received, as: UTF8.self), json.text] {
            for v in voters {
                XCTAssertFalse(text.contains(IDText.voter(v)), text)
                XCTAssertFalse(text.contains(String(v)), text)
                XCTAssertFalse(text.contains(DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(v)).description), text)
            }
        }
    }
}
