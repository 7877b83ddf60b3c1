import ClickerTally
import Foundation

/// When live counts of an open question may move.
///
/// Voter IDs and sequence numbers are in clear on the air, so whoever logs the air and films the
/// screen knows which voters sent a ballot between two pictures of the bars. If the bars moved with
/// every ballot, each move would name one voter's answer. Published counts therefore move only at
/// epochs: at least `minVoters` distinct voters with a new or changed ballot since the last epoch,
/// and at least `minInterval` since it. Each change an observer sees mixes the answers of at least
/// `minVoters` voters (a voter who sends many ballots in one epoch counts once, so an enrolled
/// student cannot fill an epoch alone by changing their own answer).
///
/// What remains: the observer's best guess for a voter is the answer that gained most in that
/// voter's epoch, right for E[largest of K answers]/K of them: 0.42 for K = 10 and four even
/// answers, against 0.33 from a class of 40's final results alone (K = 40); the final results name the
/// voters after the last epoch only as a group of fewer than K; in anonymous polls, whoever has the
/// join code can fill an epoch with made-up voters whose answers they know.
public struct PublishRule: Sendable, Hashable {
    public var minVoters: Int
    public var minInterval: Duration

    public init(minVoters: Int = 10, minInterval: Duration = .seconds(5)) {
        self.minVoters = minVoters
        self.minInterval = minInterval
    }

    /// Every ballot shows at once (how the live view behaved before epochs); for comparison in tests.
    public static let perBallot = PublishRule(minVoters: 1, minInterval: .zero)
}

/// The figures of a question that the live consumers show (view, D-Bus `Status` and `TallyChanged`,
/// `watch`, the plain log).
public struct LiveCounts: Sendable, Equatable {
    /// Count per offered answer, by label; empty while hidden.
    public var counts: [String: Int]
    public var voters: Int
    /// Voters who changed their answer (as `PollResults.changes`).
    public var changes: Int
    /// The instructor hid the counts (roster polls hide them by default while a question is open).
    public var hidden: Bool
    /// A ranked question's instant-runoff count of these same counts (the tally's kept count when
    /// they were taken), so that showing the rounds counts nothing again; nil otherwise or while hidden.
    public var rankedCount: InstantRunoff?
    /// Voters whose new or changed ballot the counts do not show yet (the next epoch shows them all):
    /// how many, never whose or which answer. 0 once the question is closed, or while hidden.
    public var notYetShown: Int = 0

    public init(counts: [String: Int], voters: Int, changes: Int, hidden: Bool = false, rankedCount: InstantRunoff? = nil) {
        self.counts = counts
        self.voters = voters
        self.changes = changes
        self.hidden = hidden
        self.rankedCount = rankedCount
    }
}

/// Holds the published counts of the open question and moves them at epochs of `PublishRule`.
/// Pure: time comes from the caller, the exact counts from a closure called only at an epoch.
struct CountPublisher: Sendable {
    let rule: PublishRule
    private(set) var published: LiveCounts
    private var pending: Set<VoterKey> = []
    private var lastEpoch: Date

    init(rule: PublishRule, start: LiveCounts, at now: Date) {
        self.rule = rule
        published = start
        lastEpoch = now
    }

    /// Starts over from counts everyone has already seen (a question opened, reopened or closed).
    mutating func reset(to counts: LiveCounts, at now: Date) {
        published = counts
        pending.removeAll()
        lastEpoch = now
    }

    /// A new or changed ballot of `voter` was counted.
    mutating func note(_ voter: VoterKey) {
        pending.insert(voter)
    }

    /// The counts to show at `now`: a new epoch's exact counts when one is due, else the last ones.
    mutating func read(at now: Date, exact: () -> LiveCounts) -> LiveCounts {
        if pending.count >= max(1, rule.minVoters), Duration.seconds(now.timeIntervalSince(lastEpoch)) >= rule.minInterval {
            published = exact()
            pending.removeAll()
            lastEpoch = now
        }
        var shown = published
        shown.notYetShown = pending.count
        return shown
    }
}
