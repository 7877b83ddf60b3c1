import ArgumentParser
import ClickerCommandLine
import ClickerLedger
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import Receivers
import TallyDaemon
import ServiceLifecycle

/// `clicker-tally receiver`: this radio as one receiver of a poll counted in a shared ledger.
struct ReceiverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receiver",
        abstract: "Count what this radio hears into the poll's shared ballot ledger (PostgreSQL).",
        discussion: """
            The receiver token (the database URL `clicker-tally ledger open` prints) names the poll; the join \
            code gives its keys. Ballots are journaled locally first, and shipped to the ledger while it can be \
            reached: a receiver cut off from the database keeps counting, and ships the journal when it is back.
            """)

    @Option(help: ArgumentHelp("The receiver's database URL, with its token (printed by clicker-tally ledger open).", valueName: "postgres://…"))
    var store: String

    @Option(help: ArgumentHelp("The poll's join code.", valueName: "code"))
    var joinCode: String

    @Option(help: ArgumentHelp("The local journal. Default: receiver-journal.sqlite in the state directory (~/.local/state/clicker).",
                               valueName: "path"))
    var journal: String?

    @OptionGroup var radio: CentralRadioArguments

    @Flag(inversion: .prefixedNo, help: "Broadcast the tally's beacon, as the ledger has it, while scanning (off: students near this receiver hear only the tally's). Default: on where the radio can broadcast while it scans.")
    var beacon: Bool?

    @Option(help: "Seed of the simulated air (--radio sim).")
    var seed: UInt64 = 1

    @Option(parsing: .unconditional, help: ArgumentHelp("Stop after this many seconds.", valueName: "seconds"))
    var duration: Double?

    func validate() throws {
        guard store.hasPrefix("postgres://") || store.hasPrefix("postgresql://") else {
            throw ValidationError("--store takes the receiver's postgres:// URL (clicker-tally ledger open prints it)")
        }
        if let d = duration, !(d > 0 && d <= 86_400) { throw ValidationError("--duration is above 0, up to 86400 seconds (got \(d))") }
        do { _ = try JoinCode(parsing: joinCode) } catch { throw ValidationError("--join-code: \(error)") }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var logger = Logger(label: "clicker.receiver")
        logger.logLevel = .info
        let code: JoinCode
        do { code = try JoinCode(parsing: joinCode) } catch { throw Failure("--join-code: \(error)") }
        let journalPath = try journal ?? Self.defaultJournal(named: "receiver-journal.sqlite")
        // The radio's instant zero on the wall clock: reports are stamped on the monotonic clock from
        // the process's start (the simulated air's clock starts with it too).
        let radioEpoch = Int64(Date().timeIntervalSince1970 * 1_000_000) - Int64(RadioInstant.now().nanoseconds / 1000)
        let receiver: LedgerReceiver
        do {
            receiver = try await LedgerReceiver.join(url: store, secret: PollSecret(deriving: code), journalPath: journalPath,
                                                     radioEpoch: radioEpoch) { [logger] away in
                logger.warning("the ledger does not answer (\(away)); trying again")
            }
        } catch { throw Failure("\(error)") }
        let opened: OpenedCentral
        do { opened = try await radio.open(radio.radio, seed: seed, logger: logger) } catch { throw Failure("\(error)") }
        logger.info("receiving for poll \(receiver.poll.poll) (vote \(receiver.poll.voteID)); journal \(journalPath)")
        // The tally's beacon, as the ledger has it, goes out on this radio too (when it can broadcast).
        let mode: BeaconMode = beacon.map { $0 ? .always : .off } ?? .whenPossible
        let relay = (mode == .off ? nil : opened.central as? any BroadcasterTransport).flatMap { radio in
            LedgerBeaconFeed(url: store, poll: receiver.poll.poll).map { (feed: $0, relay: BeaconRelay(radio: radio, mode: mode, logger: logger)) }
        }
        let service = ReceiverService(receiver: receiver, central: opened.central, beacon: relay,
                                      duration: duration.map { .milliseconds(Int64($0 * 1000)) }, logger: logger)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: service, successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
        let status = await receiver.finish()
        await opened.close()
        let counted = await receiver.ballotsCounted
        print("counted \(counted) ballots; the ledger committed \(status.shipped)"
              + (status.journaled > 0 ? "; \(status.journaled) wait in the journal \(journalPath) for the next run" : ""))
        if status.journaled > 0 { throw ExitCode(3) }
    }

    /// `name` in the state directory, made if need be.
    static func defaultJournal(named name: String) throws -> String {
        let directory: String
        do { directory = try StoreLocation.defaultDirectory(environment: ProcessInfo.processInfo.environment) } catch {
            throw Failure("no place for the journal (\(error)): give --journal")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch { throw Failure("cannot make \(directory) for the journal: \(error)") }
        return directory + "/" + name
    }
}

/// The receiver at work: the radio's reports counted, once a second a pass of the writer (a retry
/// of the database when one is due, `LedgerReceiver.keepShipping`), and the tally's beacon broadcast
/// (``BeaconRelay``); until the duration or a signal.
struct ReceiverService: Service {
    let receiver: LedgerReceiver
    let central: any CentralTransport
    let beacon: (feed: LedgerBeaconFeed, relay: BeaconRelay)?
    let duration: Duration?
    let logger: Logger

    func run() async throws {
        let receiver = self.receiver, central = self.central, logger = self.logger, duration = self.duration
        // Beside the counting, not part of it: a relay that ends (a radio that cannot broadcast) ends nothing else.
        let relaying = beacon.map { b in Task { await b.relay.run(b.feed.readings, clock: ContinuousClock()) } }
        defer { relaying?.cancel() }
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await receiver.run(central: central) }
                group.addTask { await receiver.keepShipping(logger: logger) }
                if let duration { group.addTask { try await Task.sleep(for: duration) } }
                do { _ = try await group.next() } catch is CancellationError {}
                group.cancelAll()
            }
        }
        relaying?.cancel()
        _ = await relaying?.value
        await beacon?.feed.stop()
    }
}
