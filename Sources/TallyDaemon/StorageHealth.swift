import Foundation

/// Whether the store takes writes, a part of ``PollController``. While commits fail, counting has
/// stopped: ballots are not shown or acknowledged, and a commit is tried again at most once per
/// ``retryInterval`` while ballots arrive (or when forced, by `flush()`); the first that succeeds
/// resumes counting. The first failure is kept for the run's exit status.
struct StorageHealth: Sendable {
    /// How often a stopped store is tried again while ballots arrive.
    static let retryInterval: TimeInterval = 1

    /// Why counting has stopped: the store's error while commits fail (nil while they succeed).
    private(set) var error: String?
    /// The first storage error of this run, kept after counting resumed: the run then failed.
    private(set) var firstFailure: String?
    /// Ballots counted but undone because they could not be saved (each counts when heard again).
    private(set) var notSaved = 0
    private var retryAt: Date?

    /// Whether a commit is to be tried at `now`: always while commits succeed or when forced, else
    /// once the retry is due.
    func mayCommit(at now: Date, force: Bool) -> Bool {
        guard error != nil, !force, let due = retryAt else { return true }
        return now >= due
    }

    /// A commit failed at `now`; returns whether counting stopped just now (to be said once).
    mutating func failed(_ reason: String, at now: Date) -> Bool {
        let stoppedNow = error == nil
        error = reason
        firstFailure = firstFailure ?? reason
        retryAt = now.addingTimeInterval(Self.retryInterval)
        return stoppedNow
    }

    /// A commit succeeded; returns the error counting recovers from, if it had stopped.
    mutating func succeeded() -> String? {
        defer { error = nil; retryAt = nil }
        return error
    }

    /// A ballot counted but not saved was undone.
    mutating func undidBallot() { notSaved &+= 1 }
}
