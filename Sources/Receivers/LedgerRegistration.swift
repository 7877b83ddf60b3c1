import ClickerLedger
import ClickerTally
import Synchronization

/// The instructor's poll as the linked tally registers it in the ledger: its vote ID, its change
/// policy, and every question the tally has opened. The ledger's writer registers what the ledger
/// does not have yet before each pass (``LedgerShipper``'s `prepare`), so a question opened, or a
/// tally started, while the database is away is registered when it is back, before any ballot of it.
final class LedgerRegistration: Sendable {
    let poll: Int64
    let voteID: UInt16
    let policy: ChangePolicy
    private struct State {
        var specs: [UInt8: QuestionSpec] = [:]
        var registered: Set<UInt8> = []
    }
    private let state = Mutex(State())

    init(poll: Int64, voteID: UInt16, policy: ChangePolicy, first: QuestionSpec) {
        self.poll = poll
        self.voteID = voteID
        self.policy = policy
        state.withLock { $0.specs[first.number] = first }
    }

    /// Adds a question the tally opened; false if it had it already.
    func add(_ spec: QuestionSpec) -> Bool {
        state.withLock { s in
            guard s.specs[spec.number] == nil else { return false }
            s.specs[spec.number] = spec
            return true
        }
    }

    /// Questions added and not yet registered.
    var unregistered: [QuestionSpec] {
        state.withLock { s in s.specs.values.filter { !s.registered.contains($0.number) }.sorted { $0.number < $1.number } }
    }

    /// Registers, on `ledger`, the poll and the questions it does not have from this tally yet (none:
    /// no statement). Throws what the ledger refuses (another vote ID, policy or question definition).
    func register(on ledger: BallotLedger) throws(LedgerError) {
        let due = unregistered
        guard !due.isEmpty else { return }
        try ledger.register(poll: poll, voteID: voteID, policy: policy, specs: due)
        state.withLock { s in s.registered.formUnion(due.map(\.number)) }
    }
}
