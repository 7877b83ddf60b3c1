/// The voter's side in one object: a device's identity in one poll, ready to seal ballots.
///
/// Build one when the student enters the join code; keys and the voter ID are derived once.
public struct BallotSealer: Sendable {
    public let joinCode: JoinCode
    public let mode: BallotMode
    /// This device's voter ID in this poll (anonymous: unlinkable across polls).
    public let voterID: UInt32
    let key: BallotKey

    /// Anonymous mode uses the poll key and a per-poll voter ID derived from `deviceKey`;
    /// roster mode uses the device's enrolled key.
    public init(joinCode: JoinCode, deviceKey: DeviceKey, mode: BallotMode = .anonymous) {
        self.joinCode = joinCode
        self.mode = mode
        switch mode {
        case .anonymous:
            voterID = deviceKey.anonymousVoterID(for: joinCode)
            key = BallotKey.anonymous(joinCode)
        case .roster:
            voterID = deviceKey.rosterVoterID(for: joinCode)
            key = BallotKey.roster(deviceKey: deviceKey, joinCode: joinCode)
        }
    }

    /// The ballot for `answer` to `question`. `sequence` must grow with every change of any answer
    /// in this poll (start at 1).
    public func ballot(question: UInt8, sequence: UInt16, answer: Answer) -> Ballot {
        Ballot(mode: mode, voteID: joinCode.voteID, question: question, voterID: voterID, sequence: sequence, answer: answer)
    }

    /// Manufacturer data (after the company ID) to advertise under ``BallotFormat/companyID``.
    public func advertisement(question: UInt8, sequence: UInt16, answer: Answer) -> [UInt8] {
        BallotCodec.sealAdvertisement(ballot(question: question, sequence: sequence, answer: answer), key: key)
    }

    /// The value of the GATT ballot characteristic.
    public func gattValue(question: UInt8, sequence: UInt16, answer: Answer) -> [UInt8] {
        BallotCodec.sealGATT(ballot(question: question, sequence: sequence, answer: answer), key: key)
    }
}
