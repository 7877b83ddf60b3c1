/// The acknowledgement of one counted ballot in an ACKS frame: the first 4 bytes of
/// HMAC-SHA256(ack key, voterID ‖ question ‖ sequence) (``BeaconKey/fingerprint(voterID:question:sequence:)``).
///
/// A voter looks for its own ballot's fingerprint; another ballot's fingerprint equals it by chance
/// with probability 2^-32. docs/PROTOCOL.md §11.4 gives the bound per ballot.
public struct AckFingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The 4 bytes, big-endian.
    public let value: UInt32

    public init(value: UInt32) { self.value = value }

    /// Bytes per fingerprint on the wire.
    public static let length = 4

    /// The most distinct fingerprints a voter is assumed to hear for one question: 2^18, four ballots
    /// for each of the 65,536 voters a question holds at most. A tally must not acknowledge more
    /// ballots of one question than this. (Version 3 had 4,096, which made-up voters could use up,
    /// leaving every later voter unacknowledged: docs/SECURITY.md.)
    public static let maxHeardPerQuestion = 262_144

    /// The probability that one ballot is acknowledged without being counted: each of the at most
    /// ``maxHeardPerQuestion`` other fingerprints equals the ballot's own with probability
    /// 2^-(8·``length``) (union bound). 2^18 / 2^32 = 2^-14 ≈ 6.1·10^-5.
    public static var falseAcknowledgementBound: Double {
        falseAcknowledgementBound(heard: maxHeardPerQuestion, bytes: length)
    }

    /// The union bound `heard` · 2^-(8·bytes), for fingerprints of `bytes` bytes.
    public static func falseAcknowledgementBound(heard: Int, bytes: Int) -> Double {
        var space = 1.0
        for _ in 0..<(8 * bytes) { space *= 2 }
        return Double(heard) / space
    }

    public var description: String {
        let hex = Array("0123456789abcdef")
        return String((0..<8).reversed().map { hex[Int(value >> (UInt32($0) * 4) & 0xF)] })
    }
}

/// What a voter asks of every authentic ACKS frame: is my current ballot acknowledged?
///
/// Built once per ballot (one HMAC); matching a frame is a comparison per fingerprint.
public struct AckMatcher: Sendable, Hashable {
    public let question: UInt8
    /// The fingerprint of the voter's ballot.
    public let fingerprint: AckFingerprint
    /// How many leading bytes of a fingerprint are compared: ``AckFingerprint/length`` on the wire;
    /// fewer only to measure the false-match rate of narrower fingerprints.
    public let comparedBytes: Int

    /// The matcher of the ballot (voterID, question, sequence) in the poll of `key`.
    public init(key: BeaconKey, voterID: UInt32, question: UInt8, sequence: UInt16,
                comparedBytes: Int = AckFingerprint.length) {
        self.question = question
        fingerprint = key.fingerprint(voterID: voterID, question: question, sequence: sequence)
        self.comparedBytes = max(1, min(comparedBytes, AckFingerprint.length))
    }

    /// Whether `acks` (an authentic frame) acknowledges this ballot: it is for the ballot's
    /// question and carries its fingerprint.
    public func isAcknowledged(by acks: BeaconAcks) -> Bool {
        guard acks.question == question else { return false }
        let shift = UInt32(8 * (AckFingerprint.length - comparedBytes))
        let mine = fingerprint.value >> shift
        return acks.fingerprints.contains { $0.value >> shift == mine }
    }
}
