import Foundation

import ClickerTransport
import ClickerWire

/// A poll with anonymous voters for tests: seals ballots into reports.
struct TestPoll {
    let code: JoinCode
    let secret: PollSecret
    let key: BallotKey
    init(_ text: String = "4821-K7QXM-3PF9A") {
        code = try! JoinCode(parsing: text)  // test constant
        secret = pollSecret(code)
        key = BallotKey.anonymous(secret)
    }

    func report(voter: UInt32, question: UInt8 = 1, sequence: UInt16 = 1, answer: Answer, at ms: UInt64 = 0,
                address: UInt64? = nil, mode: BallotMode = .anonymous, key k: BallotKey? = nil) -> AdvertisementReport {
        let b = Ballot(mode: mode, voteID: code.voteID, question: question, voterID: voter, sequence: sequence, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: address ?? UInt64(voter)), rssi: -60,
                                   companyID: BallotFormat.companyID, data: BallotCodec.sealAdvertisement(b, key: k ?? key),
                                   timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }
}

extension RadioInstant {
    static func ms(_ v: UInt64) -> RadioInstant { RadioInstant(nanoseconds: v * 1_000_000) }
}
