import ArgumentParser
import ClickerCommandLine
import ClickerSim
import ClickerTransport
import HCI
import Logging

/// Radio options of the central (tally) side.
struct CentralRadioArguments: ParsableArguments {
    @Option(help: RadioKind.help)
    var radio: RadioKind = .bluez

    @Option(help: "Adapter: a name (hci0) or, on BlueZ, an address; several separated by commas (hci0,hci1) all scan and broadcast. Default: the first powered adapter (raw HCI: hci0).")
    var adapter: String?

    /// The adapters of `--adapter`, in order (none: the default one). Valid after `validate()`.
    var adapters: [String] { adapter.flatMap { try? AdapterList.parse($0) } ?? [] }

    @Option(help: "Restart discovery every this many seconds, so changed votes are reported (BlueZ); 0 never.")
    var discoveryRestart: Double = 10

    func validate() throws {
        if let adapter {
            let list: [String]
            do { list = try AdapterList.parse(adapter) } catch { throw ValidationError("\(error)") }
            if list.count > 1, radio == .hci {
                throw ValidationError("--radio hci takes one adapter; several (\(adapter)) work through BlueZ, the default --radio bluez")
            }
        }
        guard discoveryRestart == 0 || (0.5...3600).contains(discoveryRestart) else {
            throw ValidationError("--discovery-restart is 0 (never) or 0.5 to 3600 seconds")
        }
    }

    @Option(help: "Socket of the simulated air (--radio sim).")
    var air: String = SimulatedAir.defaultSocketPath

    /// Opens the central side of the chosen radio; on the simulated air, in `hall` when there is one
    /// (its receivers merged into one central).
    func open(_ kind: RadioKind, seed: UInt64, hall: LectureHall? = nil, logger: Logger,
              keepTrying: Bool = false) async throws -> OpenedCentral {
        switch kind {
        case .sim:
            // A listener that lags (a `--simulate` room lives in this process) misses frames, as a
            // busy receiver does, instead of queueing them without bound.
            let broadcast = BroadcastConfiguration(listenBuffer: 8)
            let air = SimulatedAir(hall.map { AirConfiguration.hall($0, seed: seed, clock: .realTime(), broadcast: broadcast) }
                                   ?? AirConfiguration(seed: seed, clock: .realTime(), broadcast: broadcast))
            // Host the air so that voters in other processes can join. With `--radio sim` that is the
            // point of the run: an air nobody can join would never get a vote, so it is an error. A
            // `--simulate` room alone votes in this process and still runs on a private air.
            let host: AirHost?
            do { host = try air.host(path: self.air) } catch {
                if radio == .sim {
                    air.stop()
                    throw Failure.radio(error)
                }
                logger.notice("simulated air not shared on \(self.air) (\(error)): only the simulated room votes")
                host = nil
            }
            if let host { logger.info("simulated air open for clicker-vote --radio sim on \(host.path)") }
            if let hall {
                logger.info("simulated hall of \(hall.geometry.rows) rows of \(hall.geometry.seatsPerRow) seats, receivers: \(hall.receivers.map(\.description).joined(separator: ", "))")
            }
            let central = air.receivingCentral()
            return OpenedCentral(central: central, air: air) {
                MergedCentral.of(central)?.shutdown()
                await host?.shutdown()
                air.stop()
            }
        case .hci:
            let name = adapter ?? "hci0"
            let options = HCICentral.Options(
                scanRestartInterval: discoveryRestart > 0 ? .milliseconds(Int64(discoveryRestart * 1000)) : nil)
            // Bound at start-up, before the capabilities were dropped (Privileges.swift).
            let central = try PreboundHCI.take().map { HCICentral(channel: $0, adapter: name, options: options) }
                ?? HCICentral(adapter: name, options: options)
            return OpenedCentral(central: central, air: nil) { await central.shutdown() }
        case .bluez:
            return try await openBlueZ(logger: logger, keepTrying: keepTrying)
        }
    }
}

/// A central radio and how to close it.
struct OpenedCentral: Sendable {
    let central: any CentralTransport
    /// The simulated air, when the radio is simulated (students join it).
    let air: SimulatedAir?
    let close: @Sendable () async -> Void
}
