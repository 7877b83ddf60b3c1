import ClickerSim
import ClickerTransport
@testable import TallyDaemon

extension PollController {
    /// Whether GATT reads it asked for are not finished yet.
    var hasReadsOutstanding: Bool { verification.outstanding > 0 }
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

    /// Advances the virtual clock to `time`, then waits until `controller` has taken in every report
    /// the air delivered and finished the GATT reads it asked for. The clock moves on only while a
    /// read is with the air (it finishes only as the air's clock moves), never while a read is still
    /// on its way to the air, so the virtual time a read takes does not depend on how fast this
    /// machine is (the controller runs on a thread of its own, in parallel with the air).
    func drive(_ controller: PollController, until time: RadioInstant, quantum: Duration = .milliseconds(10)) async {
        await advance(until: time, quantum: quantum)
        while true {
            while await controller.reportsHeard < statistics.reportsDelivered { await Task.yield() }
            guard await controller.hasReadsOutstanding else { return }
            if pendingReads > 0 {
                await advance(until: RadioInstant(nanoseconds: now.nanoseconds + 10_000_000), quantum: quantum)
            } else {
                await Task.yield()
            }
        }
    }
}
