import ClickerTransport

/// The rejected reports of one poll, a part of ``PollController``: how many per question and
/// reason, the devices (radio addresses) behind them, since the live view counts people rather than
/// packets, and the counts not yet committed to the store.
///
/// Bounded under a flood of forged addresses: at most ``maxDevices`` devices a reason and question
/// (the count goes on; the view then shows packets), and the pending counts hold one entry per
/// question and reason.
struct RejectionLedger: Sendable {
    /// Devices remembered per question and reason.
    static let maxDevices = 4096
    /// Pending reports after which the caller commits them (and a commit takes them all).
    static let commitBatch = 256

    struct Key: Hashable, Sendable {
        var question: UInt8
        var reason: String
    }

    /// Reports rejected, by the question current when they arrived, then by reason.
    private(set) var counts: [UInt8: [String: Int]]
    private var devices: [UInt8: [String: Set<DeviceAddress>]] = [:]
    /// Counts recorded since the last ``takePending()``.
    private(set) var pending: [Key: Int] = [:]
    /// The sum of ``pending``.
    private(set) var pendingReports = 0

    /// A ledger holding `counts` already stored (a resumed poll: packets only, no devices).
    init(stored counts: [UInt8: [String: Int]] = [:]) {
        self.counts = counts
    }

    /// Records one rejected report; returns whether enough are pending to commit them now.
    mutating func record(_ reason: String, question: UInt8, from address: DeviceAddress) -> Bool {
        counts[question, default: [:]][reason, default: 0] += 1
        if devices[question]?[reason]?.count ?? 0 < Self.maxDevices {
            devices[question, default: [:]][reason, default: []].insert(address)
        }
        pending[Key(question: question, reason: reason), default: 0] += 1
        pendingReports += 1
        return pendingReports >= Self.commitBatch
    }

    /// The counts of `question`, by reason.
    func counts(of question: UInt8) -> [String: Int] { counts[question] ?? [:] }

    /// How many devices were rejected for `reason` on `question`; nil when they are not known (counts
    /// read back from the store).
    func devices(of question: UInt8, reason: String) -> Int? { devices[question]?[reason]?.count }

    /// How many devices were rejected on `question`, each once whatever its reasons; nil unless the
    /// devices of every reason counted are known.
    func devices(of question: UInt8) -> Int? {
        let byReason = devices[question] ?? [:]
        guard counts(of: question).allSatisfy({ $0.value == 0 || byReason[$0.key] != nil }) else { return nil }
        return byReason.values.reduce(into: Set<DeviceAddress>()) { $0.formUnion($1) }.count
    }

    /// The pending counts, to be written in the next commit.
    var pendingCounts: [(key: Key, count: Int)] { pending.map { ($0.key, $0.value) } }

    /// The pending counts were committed: they are no longer pending.
    mutating func committed() {
        pending.removeAll()
        pendingReports = 0
    }
}
