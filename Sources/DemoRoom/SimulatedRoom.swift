import ClickerSim
import ClickerTransport
import ClickerWire
import Synchronization
import TallyDaemon
import Voter

/// The room of `clicker-tally --simulate N`: simulated students voting on the simulated air, for the
/// demo, tests and the crash check.
///
/// With the tally's beacon on, each student follows it as a real voter does (`Classroom.follow`), so
/// after `n`, or a new poll, the room votes on what the beacon names. Without a beacon (`--no-beacon`)
/// and for churned load tests, the room is told the question by the controller, as voters given
/// `--question N` are told by hand.
public struct SimulatedRoom: Sendable {
    let room: Classroom
    let air: SimulatedAir
    let controller: PollController
    let timeScale: Double
    let churn: Double?
    let seed: UInt64
    let clock: ElapsedClock

    /// - Parameters:
    ///   - room: the students (their think times, answers and changes).
    ///   - speed: 10 makes the students answer ten times sooner.
    ///   - churn: votes per second in all that students keep changing to after answering (load tests).
    ///   - seed: the seed the room's answers to each question's kind are drawn from.
    ///   - clock: the clock the students' timers run on (a test gives the virtual air's, `air.clock`).
    public init(room: Classroom, air: SimulatedAir, controller: PollController, speed: Double = 1,
                churn: Double? = nil, seed: UInt64, clock: some Clock<Duration> = ContinuousClock()) {
        self.room = room
        self.air = air
        self.controller = controller
        timeScale = 1 / speed
        self.churn = churn
        self.seed = seed
        self.clock = ElapsedClock(clock)
    }

    /// Runs until cancelled or a graceful shutdown.
    public func run() async {
        // Each student keeps one radio for the whole run and answers every question the poll opens.
        let radios = RadioCache(air: air)
        if churn == nil, await controller.options.beacon != .off {
            await follow(radios)
        } else {
            await told(radios)
        }
    }

    private func follow(_ radios: RadioCache) async {
        let answers = QuestionRooms(room: room, seed: seed, controller: controller)
        let room = self.room, scale = timeScale, clock = self.clock
        while !Task.isCancelled {
            let changes = controller.changeFeed.subscribe()  // before reading the code: no change missed
            let code = await controller.joinCode
            let secret = PollSecret(deriving: code)  // scrypt: once per poll
            let students = Task {
                await room.follow(secret: secret, timeScale: scale, clock: clock, answers: { await answers.room(for: $0) }) { radios[$0] }
            }
            // A new poll (NewPoll on the daemon) has another join code: follow its beacon instead.
            for await _ in changes where await controller.joinCode != code { break }
            students.cancel()
            await students.value
            await answers.reset()
        }
    }

    private func told(_ radios: RadioCache) async {
        var rng = SplitMix64(seed: seed)
        let room = self.room, scale = timeScale, churn = self.churn, clock = self.clock
        var derived: PollSecret?
        while !Task.isCancelled {
            let changes = controller.changeFeed.subscribe()  // before reading the question: no change missed
            let q = await controller.question, code = await controller.joinCode
            // scrypt (32 MiB, seconds in a debug build) once per poll, not per question.
            let secret = derived.flatMap { $0.joinCode == code ? $0 : nil } ?? PollSecret(deriving: code)
            derived = secret
            // The room answers the question's kind, with its options (a set's question may have fewer).
            let spec = await controller.spec
            // Each question its own answers (``Classroom/redrawn(using:)``), so no two look alike.
            let asked = room.redrawn(using: &rng).answering(kinds: spec.kinds, options: spec.options,
                                       range: spec.numeric.map { $0.lowest...$0.highest }, using: &rng)
            let students = Task {
                await asked.run(secret: secret, question: q, timeScale: scale, churn: churn, clock: clock) { radios[$0] }
            }
            for await _ in changes {
                if await controller.question != q { break }
                if await controller.joinCode != code { break }
            }
            students.cancel()
            await students.value
        }
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
        // Each question its own answers (``Classroom/redrawn(using:)``), so no two look alike.
        let r = room.redrawn(using: &rng).answering(kinds: [q.kind.answerKind], options: max(1, Int(q.options)),
                                                    range: range, using: &rng)
        rooms[q.number] = r
        return r
    }
}
