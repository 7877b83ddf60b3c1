import ClickerTally
import ClickerTransport
import ClickerWire
import TallyDaemon
import TerminalView

/// Human summary printed at the end of a run.
enum PollSummary {
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

