import ClickerSim
import ClickerTransport
import Synchronization
@testable import TallyDaemon
import Voter

extension PollController {
    /// Whether GATT reads it asked for are not finished yet.
    var hasReadsOutstanding: Bool { verification.outstanding > 0 }

    /// Whether it has taken in `delivered` reports and every GATT read it asked for is with the air
    /// (`atAir` reads there) or waits for one of those to end: none is on its way to the air, being
    /// refused by the budget, or back from the air with a result not yet taken in.
    func isSettled(delivered: Int, atAir: Int) -> Bool {
        reportsHeard >= delivered && atAir == min(verification.outstanding, max(1, options.maxConcurrentReads))
    }
}

extension SimulatedAir {
    /// Runs `controller` on this air and returns once it listens: the air delivers only what is sent
    /// after scanning starts, and the controller runs on a thread of its own.
    func start(_ controller: PollController) async -> Task<Void, any Error> {
        let central = self.central()
        let run = Task { try await controller.run(central: central) }
        await controller.untilScanning()
        return run
    }

    /// Advances the virtual clock to `time` while `controller` keeps up: after each delivery the clock
    /// stands still until the controller has taken in every report the air delivered and every GATT read
    /// it asked for is with the air, so a read starts and ends at the same instants on the air's clock
    /// however late its task gets a thread (the controller runs on a thread of its own, its reads on the
    /// cooperative pool, in parallel with the air). Then it goes on until the reads are finished.
    /// The controller must be the air's only reader: its reads at the air are the air's `pendingReads`.
    /// Each of `voters` acts likewise before the clock moves on (``AirVoter/isSettled``).
    func drive(_ controller: PollController, until time: RadioInstant, quantum: Duration = .milliseconds(10),
               voters: [AirVoter] = []) async {
        let settled = { await self.settle(controller, voters: voters) }
        await advance(until: time, quantum: quantum, settling: settled)
        while await controller.hasReadsOutstanding {
            await advance(until: RadioInstant(nanoseconds: now.nanoseconds + 10_000_000), quantum: quantum, settling: settled)
        }
    }

    /// Returns once `controller` is settled (``PollController/isSettled(delivered:atAir:)``) and its
    /// beacon has acted at this instant (``PollController/beaconSettled()``: a beacon on the air's clock
    /// then seals and broadcasts at the instants its timers name, however late its task gets a thread).
    /// The air's counts are read before the controller's turn: a read that reaches the air meanwhile
    /// only makes it look unsettled once more. The beacon comes second, as the reports taken in may
    /// wake it; what it does then (a payload handed to the air) delivers nothing before the air moves on.
    /// The voters come last: what they do (a ballot handed to the air) reaches nobody before the air moves.
    func settle(_ controller: PollController, voters: [AirVoter] = []) async {
        while await !controller.isSettled(delivered: statistics.reportsDelivered, atAir: pendingReads) {
            await Task.yield()
        }
        await controller.beaconSettled()
        while !voters.allSatisfy(\.isSettled) { await Task.yield() }
    }
}

/// A voter's radio on the virtual air and the lines typed to it, for a `BeaconFollowService` that `drive`
/// lets act at each instant of the air: it passes ``turns`` to the service and runs on the air's clock.
final class AirVoter: Sendable {
    let radio: SimulatedPeripheral
    let turns = FollowTurns()
    /// What the student types (``type(_:)``).
    let lines: AsyncStream<String>
    private let input: AsyncStream<String>.Continuation
    private let typed = Mutex(0)

    init(_ air: SimulatedAir, rssi: Double? = nil) {
        radio = air.addPeripheral(rssi: rssi)
        (lines, input) = AsyncStream<String>.makeStream()
    }

    func type(_ line: String) {
        typed.withLock { $0 += 1 }
        input.yield(line)
    }

    /// Whether the voter has acted on every frame the air handed its radio and every line typed, and
    /// waits for a timer due later (``FollowTurns/isSettled(heard:read:)``).
    var isSettled: Bool { turns.isSettled(heard: radio.reportsHeard, read: typed.withLock { $0 }) }
}
