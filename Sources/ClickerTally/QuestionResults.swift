import ClickerTransport
import ClickerWire

/// What a view shows for one question; `Equatable`, so tests can compare tallies.
public struct QuestionResults: Sendable, Hashable {
    public var question: UInt8
    /// Every offered single-choice letter, and every other answer with votes, in wire order.
    public var counts: [(answer: Answer, count: Int)] {
        countTable.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
    /// Answer → count (offered single choices included with 0).
    public var countTable: [Answer: Int]
    public var voters: Int
    /// Voters who changed their answer: a ballot with a higher sequence and another answer replaced
    /// their counted one (see ``VoterRecord/changed``). Results, live counts, `--json` and the export
    /// all report this figure as `changes`.
    public var changedVoters: Int
    /// Counted voters whose counted ballot is verified.
    public var verifiedVoters: Int
    public var unregisteredVoters: Int
    public var firstHeard: RadioInstant?
    public var lastHeard: RadioInstant?
    /// Each counted voter's answer.
    public var answers: [VoterKey: Answer]
    /// The question, for ``byKind``.
    let spec: QuestionSpec
    /// A ranked question's kept instant-runoff count (``QuestionTally/rankedCount``), for ``byKind``.
    let rankedCount: InstantRunoff?
    /// The results by the question's kind: counts per option, combinations, histogram and
    /// quartiles, or the instant-runoff rounds. Computed when asked (not every reader of the results
    /// needs them), each time it is asked; a ranked question's rounds are the tally's kept count.
    public var byKind: KindResults { KindResults(spec: spec, counts: countTable, ranked: rankedCount) }

    init(_ q: QuestionTally) {
        question = q.spec.number
        var table = q.counts
        if q.spec.kinds.contains(.choice) {
            for i in 0..<q.spec.options { table[.choice(UInt8(i)), default: 0] += 0 }
        }
        countTable = table
        voters = q.voterCount
        changedVoters = q.changedVoters
        verifiedVoters = q.verifiedVoters
        unregisteredVoters = q.unregistered.count
        firstHeard = q.firstHeard
        lastHeard = q.lastHeard
        answers = q.voters.mapValues { $0.answer }
        spec = q.spec
        rankedCount = q.rankedCount
    }
}
