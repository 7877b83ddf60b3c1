import ClickerTally
import ClickerTransport
import ClickerWire
import Receivers
import TallyDaemon
import TerminalView

/// Human summary printed at the end of a run.
enum PollSummary {
    /// The run's failure after the database could not be written: the exit status says so.
    static func storageFailed(_ error: String) -> String {
        "the database could not be written during this run (\(error)): counting stopped while it failed; "
            + "the votes shown were saved, and votes heard meanwhile count only if heard again once it could be written"
    }

    /// What became of this tally's own ballots in the shared ledger (``TallyLedgerLink/finish()``), and
    /// `caughtUp`: the ballots its last read changed (nil when the ledger could not be read then).
    static func ledger(_ s: ShipperStatus, caughtUp: Int?, poll: Int64) -> String {
        "ledger poll \(poll): it committed \(s.shipped) ballot\(s.shipped == 1 ? "" : "s") this tally counted"
            + (s.journaled > 0 ? "; \(s.journaled) wait in the journal and go at the next run with --ledger" : "")
            + (caughtUp.map { $0 > 0 ? "; its last read counted \($0) more from receivers" : "" }
               ?? "; the results may lack receivers' last ballots: the ledger could not be read at the stop")
            + (s.databaseError.map { " (last error: \($0))" } ?? "")
    }

    static func text(_ r: PollResults, simulatedRoom: Int? = nil) -> String {
        let total = max(1, r.counts.values.reduce(0, +))
        var lines = ["vote \(IDText.vote(UInt16(clamping: r.voteID))) question \(r.question): \(r.voters) voters, \(r.changes) changed their answer"]
        var room = TallyViewModel(joinCode: "", voters: r.voters)
        room.simulatedRoom = simulatedRoom
        if let note = room.roomNote { lines.append("  " + note) }
        // A numeric question's counts are per wire value; its histogram and statistics below say it
        // in the question's units instead.
        if r.results?.kind != .numeric {
            for (answer, n) in r.counts.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(answer)  \(String(repeating: "#", count: n * 40 / total)) \(n)")
            }
        }
        for line in r.results?.summaryLines ?? [] { lines.append("  " + line) }
        let rejected = r.rejected.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        if !rejected.isEmpty {
            lines.append("  rejected: " + rejected.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
        }
        return lines.joined(separator: "\n")
    }
}

