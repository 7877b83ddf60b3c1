import ClickerTally
import ClickerWire

/// The results of one question, as `clicker-tally --json`, `clicker-tally results --json` and
/// the D-Bus `Results` method give them. Field names are a stable interface for scripts.
public struct PollResults: Codable, Sendable, Equatable {
    public struct BallotRow: Codable, Sendable, Equatable {
        /// The voter ID as `IDText.voter` writes it (eight hex digits, no mode prefix: a results row is
        /// always a counted voter of the poll's own mode).
        public var voter: String
        public var answer: String
        public var sequence: Int
        /// The radio address the counted ballot came from; roster polls only (anonymous polls keep none).
        public var address: String?
        /// The full-tag ballot was read back over GATT and matched.
        public var gattVerified: Bool
        /// "Name (student ID)" in roster polls.
        public var student: String?
    }

    public var voteID: Int
    public var question: Int
    public var open: Bool
    /// Count per offered answer, by letter (`A`…`D`) or answer text.
    public var counts: [String: Int]
    public var voters: Int
    /// Voters who changed their answer: a ballot with a higher sequence and a different answer replaced
    /// their counted one (not a stale ballot, not a repeat cast; ClickerTally's `VoterRecord.changed`).
    public var changes: Int
    /// Authentic votes from devices outside the roster (roster polls only), not in the totals.
    public var unregistered: Int
    /// Counted voters whose counted ballot was read back over GATT and matched.
    public var gattVerified: Int
    /// Reports not counted while this question was the current one, by reason (see PROTOCOL.md
    /// "Rejections"); every report counts, repeats of one bad payload included.
    public var rejected: [String: Int]
    /// One row per counted voter. In anonymous polls only while the question is open, without
    /// addresses; a closed anonymous question has none.
    public var ballots: [BallotRow]
    /// The results by the question's kind (docs/GUIDE.md, "Results by kind"): counts per option, exact
    /// combinations, histogram with median and quartiles, or every instant-runoff round. A closed
    /// anonymous question keeps them (computed from its counted answers, which carry no voter ID).
    public var results: KindReport?
}
