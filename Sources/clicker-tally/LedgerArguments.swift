import ArgumentParser
import ClickerCommandLine
import ClickerTransport
import Foundation
import Logging
import Receivers
import TallyDaemon

/// `--ledger`: the poll is also counted by receivers into a shared ledger (docs/GUIDE.md, "Receivers
/// and a shared database"); the tally counts their ballots with its own, and writes its own there.
struct LedgerArguments: ParsableArguments {
    @Option(help: ArgumentHelp("Count this poll with its receivers in the shared ballot ledger at this URL (the instructor's credentials; needs --ledger-poll).",
                               valueName: "postgres://…"))
    var ledger: String?

    @Option(help: ArgumentHelp("The poll's number in the ledger (the one `clicker-tally ledger open --poll` gave the receivers' tokens).",
                               valueName: "n"))
    var ledgerPoll: Int64?

    @Option(help: ArgumentHelp("The journal of what this tally counted, until the ledger committed it. Default: tally-ledger-journal.sqlite in the state directory.",
                               valueName: "path"))
    var ledgerJournal: String?

    func validate() throws {
        if let ledger {
            guard ledger.hasPrefix("postgres://") || ledger.hasPrefix("postgresql://") else {
                throw ValidationError("--ledger takes a postgres:// URL")
            }
            guard ledgerPoll != nil else { throw ValidationError("--ledger needs --ledger-poll (the poll's number in the ledger)") }
        } else if ledgerPoll != nil || ledgerJournal != nil {
            throw ValidationError("--ledger-poll and --ledger-journal go with --ledger")
        }
    }

    /// Links `controller` to the ledger, or nil without `--ledger`; `logger` hears whether the ledger answered.
    func link(_ controller: PollController, logger: Logger) async throws -> TallyLedgerLink? {
        guard let ledger, let ledgerPoll else { return nil }
        let journal = try ledgerJournal ?? ReceiverCommand.defaultJournal(named: "tally-ledger-journal.sqlite")
        // The radio's instant zero on the wall clock (reports are stamped on the monotonic clock).
        let radioEpoch = Int64(Date().timeIntervalSince1970 * 1_000_000) - Int64(RadioInstant.now().nanoseconds / 1000)
        do {
            return try await TallyLedgerLink.start(url: ledger, poll: ledgerPoll, controller: controller, journalPath: journal,
                                                   radioEpoch: radioEpoch, logger: logger)
        } catch { throw Failure("the ledger: \(error)") }
    }
}
