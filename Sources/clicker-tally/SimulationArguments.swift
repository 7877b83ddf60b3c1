import ArgumentParser
import ClickerSim
import ClickerTransport
import ClickerWire
import Logging
import DemoRoom
import TallyDaemon
import Voter

/// A simulated room of students (demos, tests, the crash check).
struct SimulationArguments: ParsableArguments {
    @Option(help: "Simulate a room of N students on the simulated air (implies --radio sim).")
    var simulate: Int?

    @Option(help: "Seed of the simulated room and air.")
    var seed: UInt64 = 1

    @Option(help: "Speed of the simulated students: 10 makes them answer ten times sooner.")
    var simulateSpeed: Double = 1

    @Option(help: ArgumentHelp("After answering, simulated students keep changing answers so that about N votes/s arrive (load tests).",
                               valueName: "N"))
    var simulateChurn: Double?

    @Option(help: ArgumentHelp("Seat the simulated room in a lecture hall of ROWS rows of SEATS seats (such as 30x20), with path loss per link: each receiver hears part of it.",
                               valueName: "ROWSxSEATS"))
    var hall: String?

    @Option(help: ArgumentHelp("The hall's receivers, one simulated adapter each, merged into the one tally: front, middle, back or X:Y in metres from the front-left corner, separated by commas. Default: front.",
                               valueName: "list"))
    var receivers: String?

    func validate() throws {
        if let c = simulateChurn, !(c > 0 && c <= 10_000) { throw ValidationError("--simulate-churn is above 0, up to 10000 votes/s") }
        if let n = simulate, !(0...5000).contains(n) { throw ValidationError("--simulate takes 0 to 5000 students") }
        guard simulateSpeed > 0, simulateSpeed <= 1000 else { throw ValidationError("--simulate-speed is above 0, up to 1000") }
        _ = try lectureHall()
    }

    /// The hall of `--hall` and `--receivers`; nil without `--hall`.
    func lectureHall() throws -> LectureHall? {
        guard let hall else {
            if receivers != nil { throw ValidationError("--receivers places receivers in a hall: give --hall too (such as --hall 30x20)") }
            return nil
        }
        guard let n = simulate else { throw ValidationError("--hall seats a simulated room: give --simulate N too") }
        do {
            let geometry = try HallGeometry.parse(hall)
            guard n <= geometry.seats else {
                throw ValidationError("a \(geometry.rows)x\(geometry.seatsPerRow) hall has \(geometry.seats) seats, too few for --simulate \(n)")
            }
            let placements = try receivers.map { try ReceiverPlacement.parseList($0, in: geometry) } ?? [.front]
            return LectureHall(geometry: geometry, receivers: placements)
        } catch let e as HallSyntaxError {
            throw ValidationError(e.description)
        }
    }

    /// The students' task, when a room is simulated on `air`.
    func companions(air: SimulatedAir?, controller: PollController, options: Int, question: UInt8,
                    logger: Logger) -> [@Sendable () async -> Void] {
        guard let n = simulate, let air else { return [] }
        var rng = SplitMix64(seed: seed)
        let room = Classroom(count: n, options: options, using: &rng)
        logger.info("simulating \(room.students.count) students voting on the simulated air")
        let simulated = SimulatedRoom(room: room, air: air, controller: controller, speed: simulateSpeed,
                                      churn: simulateChurn, seed: seed &+ 1)
        return [{ await simulated.run() }]
    }
}
