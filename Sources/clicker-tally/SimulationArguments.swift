import ArgumentParser
import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import Logging
import Synchronization
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

    func validate() throws {
        if let c = simulateChurn, !(c > 0 && c <= 10_000) { throw ValidationError("--simulate-churn is above 0, up to 10000 votes/s") }
        if let n = simulate, !(0...5000).contains(n) { throw ValidationError("--simulate takes 0 to 5000 students") }
        guard simulateSpeed > 0, simulateSpeed <= 1000 else { throw ValidationError("--simulate-speed is above 0, up to 1000") }
    }

    /// The students' task, when a room is simulated on `air`.
    func companions(air: SimulatedAir?, controller: PollController, options: Int, question: UInt8,
                    logger: Logger) -> [@Sendable () async -> Void] {
        guard let n = simulate, let air else { return [] }
        var rng = SplitMix64(seed: seed)
        let room = Classroom(count: n, options: options, using: &rng)
        let scale = 1 / simulateSpeed
        logger.info("simulating \(room.students.count) students voting on the simulated air")
        let churn = simulateChurn
        let kindSeed = seed &+ 1
        // Each student keeps one radio for the whole run and answers every question the poll opens.
        let radios = RadioCache(air: air)
        // The simulated central broadcasts the beacon (SimulatedCentral is a BroadcasterTransport): the
        // students follow it as real voters do, so after `n` they vote on the question the beacon names.
        let answers = QuestionRooms(room: room, seed: kindSeed, controller: controller)
        return [{
            // Churned load tests keep the loop below: their students change answers on a timer.
            if churn == nil, await controller.options.beacon {
                while !Task.isCancelled {
                    let code = await controller.joinCode
                    let secret = PollSecret(deriving: code)  // scrypt: once per poll
                    let students = Task {
                        await room.follow(secret: secret, timeScale: scale, answers: { await answers.room(for: $0) }) { radios[$0] }
                    }
                    // A new poll (NewPoll on the daemon) has another join code: follow its beacon instead.
                    while !Task.isCancelled, await controller.joinCode == code { try? await Task.sleep(for: .seconds(1)) }
                    students.cancel()
                    await students.value
                    await answers.reset()
                }
                return
            }
            // A tally that does not broadcast (--no-beacon): the room is told the question by polling
            // the controller every 200 ms, as voters given --question N are told by hand.
            var current = await controller.question
            var code = await controller.joinCode
            var secret = PollSecret(deriving: code)  // scrypt: once per poll, not per question
            var kindRNG = SplitMix64(seed: kindSeed)
            while !Task.isCancelled {
                let q = current
                let now = await controller.joinCode
                if now != code { code = now; secret = PollSecret(deriving: code) }
                let s = secret
                // The room answers the question's kind, with its options (a set's question may have fewer).
                let spec = await controller.spec
                let asked = room.answering(kinds: spec.kinds, options: spec.options,
                                           range: spec.numeric.map { $0.lowest...$0.highest }, using: &kindRNG)
                let students = Task { [asked] in
                    await asked.run(secret: s, question: q, timeScale: scale, churn: churn) { radios[$0] }
                }
                while !Task.isCancelled, current == q {
                    try? await Task.sleep(for: .milliseconds(200))
                    current = await controller.question
                }
                students.cancel()
                await students.value
            }
        }]
    }
}

/// One simulated radio per student, made on first use and reused for every question (the air keeps
/// a record of every device it has seen, so a fresh radio per question would grow it).
final class RadioCache: Sendable {
    private let air: SimulatedAir
    private let radios = Mutex<[Int: SimulatedPeripheral]>([:])

    init(air: SimulatedAir) { self.air = air }

    subscript(student: Int) -> SimulatedPeripheral {
        radios.withLock { r in
            if let p = r[student] { return p }
            let p = air.addPeripheral()
            r[student] = p
            return p
        }
    }
}

/// The room answering each question the beacon opens, in that question's kind and options (and, for a
/// numeric question, the range its definition gives): made once per question number.
actor QuestionRooms {
    let room: Classroom
    let controller: PollController
    var rng: SplitMix64
    var rooms: [UInt8: Classroom] = [:]

    init(room: Classroom, seed: UInt64, controller: PollController) {
        self.room = room
        self.controller = controller
        rng = SplitMix64(seed: seed)
    }

    func reset() { rooms = [:] }

    func room(for q: BeaconQuestion) async -> Classroom {
        if let r = rooms[q.number] { return r }
        let spec = await controller.spec
        let range = spec.number == q.number ? spec.numeric.map { $0.lowest...$0.highest } : nil
        let r = room.answering(kinds: [q.kind.answerKind], options: max(1, Int(q.options)), range: range, using: &rng)
        rooms[q.number] = r
        return r
    }
}
