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

let testCode = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

/// A sealed advertisement of an anonymous ballot of `code`'s poll.
func anonymousReport(voter: UInt32, answer: Answer, sequence: UInt16 = 1, question: UInt8 = 1,
                     code: JoinCode = testCode) -> AdvertisementReport {
    let b = Ballot(voteID: code.voteID, question: question, voterID: voter, sequence: sequence, answer: answer)
    return AdvertisementReport(address: DeviceAddress(rawValue: 0xC000_0000_0000 | UInt64(voter)), rssi: -60,
                               companyID: BallotFormat.companyID,
                               data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))),
                               timestamp: RadioInstant(nanoseconds: 1_000_000))
}

/// A poll whose live counts move with every ballot (`PublishRule.perBallot`), so a test sees each one.
func perBallotPoll(roster: Roster? = nil, options: Int = 4) throws -> PollController {
    var o = PollOptions(joinCode: testCode, roster: roster, options: options, confirmByGATT: false)
    o.publishRule = .perBallot
    return try PollController(options: o, store: nil)
}

/// Reads the event stream of a server: each `snapshot` event decoded, with its raw text.
struct EventReader {
    let stream: HTTPTestClient.Stream
    var iterator: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator
    var parser = ServerSentEvents()
    var pending: [ServerSentEvents.Event] = []
    /// Every byte received, for privacy checks.
    var received: [UInt8] = []

    init(port: Int, query: String = "", timeout: Duration = .seconds(30)) async throws {
        let stream = try await HTTPTestClient.open(port: port, path: "/events" + query)
        self.stream = stream
        iterator = stream.body.makeAsyncIterator()
        // A bound, not a wait: a test whose event never comes fails (the stream ends) instead of hanging.
        Task {
            try? await Task.sleep(for: timeout)
            await stream.close()
        }
    }

    /// The next server-sent event (nil when the stream ended).
    mutating func next() async throws -> ServerSentEvents.Event? {
        while pending.isEmpty {
            guard let chunk = try await iterator.next() else { return nil }
            received += chunk
            pending += parser.feed(chunk)
        }
        return pending.removeFirst()
    }

    /// The next snapshot event for which `condition` holds, skipping others.
    mutating func snapshot(where condition: (ProjectorSnapshot) -> Bool) async throws -> (ProjectorSnapshot, String) {
        while let e = try await next() {
            guard e.name == "snapshot" else { continue }
            let s = try JSONDecoder().decode(ProjectorSnapshot.self, from: Data(e.data.utf8))
            if condition(s) { return (s, e.data) }
        }
        throw HTTPTestClientError.noResponse
    }
}
