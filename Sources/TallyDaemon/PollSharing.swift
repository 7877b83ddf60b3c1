import ClickerTally
import ClickerTransport
import ClickerWire

/// A voter's counted ballot on one question, as a tally and the other receivers of its poll share it
/// (through the shared ledger, docs/LEDGER.md): what ``PollController/shareCounted(with:)`` hands on,
/// and what ``PollController/countShared(_:)`` takes.
public struct SharedBallot: Sendable, Hashable {
    public var question: UInt8
    public var voter: VoterKey
    public var sequence: UInt16
    public var answer: Answer
    /// Whether the ballot is verified (a roster ballot, or an anonymous one read back over GATT here).
    public var verified: Bool
    /// The device's address when it was heard.
    public var address: DeviceAddress
    /// When this tally's radio last heard it (zero for a ballot from elsewhere).
    public var heard: RadioInstant

    public init(question: UInt8, voter: VoterKey, sequence: UInt16, answer: Answer, verified: Bool,
                address: DeviceAddress, heard: RadioInstant = .zero) {
        self.question = question
        self.voter = voter
        self.sequence = sequence
        self.answer = answer
        self.verified = verified
        self.address = address
        self.heard = heard
    }
}

/// One poll counted by several receivers: the ballots this tally counts go out, the ballots the
/// others counted come in and count here as if heard here.
extension PollController {
    /// Hands each ballot this tally's own radio gets counted from now on (new, changed, counted again
    /// under another sequence, or verified by a GATT read) to `sink`, once it is saved; nil stops.
    /// `sink` runs on the controller's thread: it must only hand the ballot on.
    public func shareCounted(with sink: (@Sendable (SharedBallot) -> Void)?) {
        countedSink = sink
    }

    /// Hands each payload this tally's radio broadcasts from now on (signed, as it went out) to
    /// `sink`, and nil when the tally stops broadcasting; nil stops. `sink` runs on the controller's
    /// thread or the beacon's task: it must only hand the payload on.
    public func shareBeacon(with sink: (@Sendable (BroadcastPayload?) -> Void)?) {
        beaconSink = sink
    }

    /// Counts ballots that other receivers of this poll counted, by the counting rule, as if heard
    /// now: saved, shown, and acknowledged by the beacon like ballots heard here. A ballot for a
    /// question not open here, or that ranks below the one counted here (this tally's own ballots
    /// coming back among them), changes nothing and is not a rejection. Returns how many changed a
    /// voter's counted ballot.
    @discardableResult
    public func countShared(_ ballots: [SharedBallot]) -> Int {
        var changed = 0
        for s in ballots {
            let b = Ballot(mode: s.voter.mode, voteID: joinCode.voteID, question: s.question, voterID: s.voter.voterID,
                           sequence: s.sequence, answer: s.answer)
            let before = version
            var previous: VoterRecord?
            let outcome = pipeline.tally.merge(b, from: s.address, at: radioNow, previous: &previous)
            accept(IngestResult(outcome: outcome, ballot: b, previous: previous), address: s.address, heardElsewhere: true)
            if outcome.changesTotals || (outcome == .repeated && version != before) { changed += 1 }
        }
        return changed
    }

    /// Hands the counted ballot of `b`'s voter to the sink, if there is one.
    func share(_ b: Ballot) {
        guard let countedSink, let c = pipeline.tally.counted(b) else { return }
        countedSink(SharedBallot(question: b.question, voter: VoterKey(mode: b.mode, voterID: b.voterID), sequence: c.sequence,
                                 answer: c.answer, verified: c.verified, address: c.address, heard: c.lastHeard))
    }
}
