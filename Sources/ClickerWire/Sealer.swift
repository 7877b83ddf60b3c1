import Crypto

/// The voter's side in one object: a device's identity in one poll, ready to seal ballots.
///
/// Build one per poll from the poll secret S (derive it once, ``PollSecret/init(deriving:)``);
/// keys, the signing key and the voter ID are derived here once.
public struct BallotSealer: Sendable {
    public let secret: PollSecret
    public var joinCode: JoinCode { secret.joinCode }
    public let mode: BallotMode
    /// This device's voter ID in this poll: the hash of ``publicKey`` in anonymous mode, the roster
    /// ID (from D_roster) in roster mode.
    public let voterID: UInt32
    /// This device's per-poll Ed25519 public key (32 bytes), carried in every GATT value.
    public let publicKey: [UInt8]
    let key: BallotKey
    /// The 32-byte Ed25519 seed (`Curve25519.Signing.PrivateKey` is not `Sendable`; it is rebuilt
    /// from the seed for each signature, which costs one scalar multiplication).
    let signingSeed: [UInt8]

    /// Anonymous mode uses the poll key and the self-certifying voter ID of the per-poll signing
    /// key; roster mode uses the student's roster key.
    public init(secret: PollSecret, deviceKey: DeviceKey, mode: BallotMode = .anonymous) {
        self.secret = secret
        self.mode = mode
        let signingKey = deviceKey.signingKey(mode: mode, secret: secret)
        signingSeed = Array(signingKey.rawRepresentation)
        publicKey = Array(signingKey.publicKey.rawRepresentation)
        switch mode {
        case .anonymous:
            voterID = KeyDerivation.anonymousVoterID(publicKey: publicKey)
            key = BallotKey.anonymous(secret)
        case .roster:
            let r = deviceKey.rosterKey
            voterID = r.voterID(in: secret)
            key = BallotKey.roster(r, secret: secret)
        }
    }

    /// The ballot for `answer` to `question`. `sequence` is per poll: start at 1, take the next
    /// number for every new ballot (new question or different answer).
    public func ballot(question: UInt8, sequence: UInt16, answer: Answer) -> Ballot {
        Ballot(mode: mode, voteID: secret.voteID, question: question, voterID: voterID, sequence: sequence, answer: answer)
    }

    /// Manufacturer data (after the company ID) to advertise under ``BallotFormat/companyID``.
    public func advertisement(question: UInt8, sequence: UInt16, answer: Answer) -> [UInt8] {
        BallotCodec.sealAdvertisement(ballot(question: question, sequence: sequence, answer: answer), key: key)
    }

    /// The value of the GATT ballot characteristic: the 142-byte signed ballot.
    public func gattValue(question: UInt8, sequence: UInt16, answer: Answer) -> [UInt8] {
        let signingKey: Curve25519.Signing.PrivateKey
        do { signingKey = try Curve25519.Signing.PrivateKey(rawRepresentation: signingSeed) } catch {
            // The seed came from a valid key in init.
            fatalError("Ed25519 refused its own seed: \(error)")
        }
        return BallotCodec.sealGATT(ballot(question: question, sequence: sequence, answer: answer), key: key,
                                    signingKey: signingKey)
    }
}
