import ClickerLedger
import ClickerTally
import Synchronization

/// The instructor's poll as the linked tally registers it in the ledger: its vote ID, its change
/// policy, every question the tally has opened, and those it has closed. The ledger's writer
/// registers what the ledger does not have yet before each pass (``LedgerShipper``'s `prepare`), so a
/// question opened, or a tally started, while the database is away is registered when it is back,
/// before any ballot of it.
///
/// A question the tally closed is closed in the ledger only once the ledger has every ballot of it
/// the tally counted (the ledger takes none after its close): the link asks (``requestClose(_:)``),
/// and releases the request (``release(_:)``) after a pass of the writer that began after it left the
/// journal empty; the writer's next pass closes it.
final class LedgerRegistration: Sendable {
    let poll: Int64
    let voteID: UInt16
    let policy: ChangePolicy
    private struct State {
        var specs: [UInt8: QuestionSpec] = [:]
        var registered: Set<UInt8> = []
        /// Closed by the tally, not yet released.
        var closing: Set<UInt8> = []
        /// Released: closed in the ledger by the writer's next pass.
        var due: Set<UInt8> = []
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

    /// The tally closed `question`: to be closed in the ledger once released.
    func requestClose(_ question: UInt8) {
        state.withLock { _ = $0.closing.insert(question) }
    }

    /// Close requests not yet released.
    var closing: Set<UInt8> { state.withLock { $0.closing } }

    /// Releases `questions`' close requests: the ledger has every ballot of them the tally counted.
    func release(_ questions: Set<UInt8>) {
        state.withLock { s in
            s.closing.subtract(questions)
            s.due.formUnion(questions)
        }
    }

    /// Registers, on `ledger`, the poll and the questions it does not have from this tally yet, and
    /// closes those released (none of either: no statement). Throws what the ledger refuses (another
    /// vote ID, policy or question definition).
    func register(on ledger: BallotLedger) throws(LedgerError) {
        let due = unregistered
        if !due.isEmpty {
            try ledger.register(poll: poll, voteID: voteID, policy: policy, specs: due)
            state.withLock { s in s.registered.formUnion(due.map(\.number)) }
        }
        let closing = state.withLock { $0.due }
        guard !closing.isEmpty else { return }
        // A question the ledger does not have has nothing to close.
        let there = Set(try ledger.questions(poll: poll).map(\.number))
        for q in closing.sorted() where there.contains(q) { try ledger.closeQuestion(poll: poll, question: q) }
        state.withLock { $0.due.subtract(closing) }
    }
}
