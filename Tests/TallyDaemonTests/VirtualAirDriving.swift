import ClickerSim
import ClickerTransport
@testable import TallyDaemon

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
    func drive(_ controller: PollController, until time: RadioInstant, quantum: Duration = .milliseconds(10)) async {
        let settled = { await self.settle(controller) }
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
    func settle(_ controller: PollController) async {
        while await !controller.isSettled(delivered: statistics.reportsDelivered, atAir: pendingReads) {
            await Task.yield()
        }
        await controller.beaconSettled()
    }
}
