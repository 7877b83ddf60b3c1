import ClickerTransport
import ClickerWire
import Logging
import ServiceLifecycle

/// A room of simulated students for demos: each is a real `VoterSession` on its own peripheral
/// radio, voting after a think time and sometimes changing their mind.
///
/// Timing follows what a lecture looks like: most students answer within 5–25 s of the question
/// appearing (log-normal-ish: a quick group and a long tail), about 15 % change their answer once,
/// a few never vote. Answers lean towards one "right" option so the bars look like a real class.
public struct Classroom: Sendable {
    public struct Student: Sendable {
        public var thinkTime: Duration
        public var answer: Answer
        /// When set, the student changes to this answer after the extra delay.
        public var change: (after: Duration, to: Answer)?
        /// Another answer of the same kind (never the final one), which a churning student moves
        /// to and back from.
        public var alternate: Answer

        /// The answer the student ends on without churn.
        public var final: Answer { change?.to ?? answer }
    }

    public let students: [Student]
    /// Answers offered per question.
    public let options: Int

    /// Builds `count` students drawn from `rng` (a seeded generator gives a reproducible room).
    public init<G: RandomNumberGenerator>(count: Int, options: Int = 4, abstainRate: Double = 0.03, using rng: inout G) {
        let right = Int.random(in: 0..<options, using: &rng)
        func pick() -> Answer {
            // About half pick the right answer; the rest spread over the others.
            if Double.random(in: 0..<1, using: &rng) < 0.5 { return .choice(UInt8(right)) }
            return .choice(UInt8(Int.random(in: 0..<options, using: &rng)))
        }
        var out: [Student] = []
        for _ in 0..<count {
            if Double.random(in: 0..<1, using: &rng) < abstainRate { continue }
            // Quick students (40 %) answer in 2–8 s, the rest in 6–25 s.
            let quick = Double.random(in: 0..<1, using: &rng) < 0.4
            let t = quick ? Double.random(in: 2...8, using: &rng) : Double.random(in: 6...25, using: &rng)
            let first = pick()
            var change: (Duration, Answer)?
            if Double.random(in: 0..<1, using: &rng) < 0.15 {
                var second = pick()
                if second == first { second = .choice(UInt8((Int(answerIndex(first)) + 1) % options)) }
                change = (.milliseconds(Int64(Double.random(in: 3...12, using: &rng) * 1000)), second)
            }
            let last = change?.1 ?? first
            out.append(Student(thinkTime: .milliseconds(Int64(t * 1000)), answer: first, change: change,
                               alternate: .choice(UInt8((Int(answerIndex(last)) + 1) % options))))
        }
        students = out
        self.options = max(1, options)
    }

    /// The same students (think times, who changes their mind and when) with answers drawn again for
    /// another question: another "right" option, and a question more or less clear (between a third
    /// and four fifths pick it first), so that each question of a demo gets counts of its own.
    public func redrawn<G: RandomNumberGenerator>(using rng: inout G) -> Classroom {
        let right = Int.random(in: 0..<options, using: &rng)
        let clarity = Double.random(in: 0.33...0.8, using: &rng)
        func pick() -> Answer {
            if Double.random(in: 0..<1, using: &rng) < clarity { return .choice(UInt8(right)) }
            return .choice(UInt8(Int.random(in: 0..<options, using: &rng)))
        }
        return Classroom(options: options, students: students.map { s in
            let first = pick()
            var change: (after: Duration, to: Answer)?
            if let c = s.change {
                var second = pick()
                if second == first { second = .choice(UInt8((Int(answerIndex(first)) + 1) % options)) }
                change = (c.after, second)
            }
            let last = change?.to ?? first
            return Student(thinkTime: s.thinkTime, answer: first, change: change,
                           alternate: .choice(UInt8((Int(answerIndex(last)) + 1) % options)))
        })
    }

    /// The same room answering a question that accepts `kinds`: in the first kind of single choice,
    /// multi-select, ranking, true/false and numeric that it accepts, with `options` options and, for
    /// a numeric question, in `range` (0…100 when the question declares none). Unchanged when it
    /// accepts none of them.
    public func answering<G: RandomNumberGenerator>(kinds: Set<Answer.Kind>, options: Int, range: ClosedRange<Int16>?,
                                                    using rng: inout G) -> Classroom {
        let preference: [Answer.Kind] = [.choice, .multiSelect, .ranking, .trueFalse, .numeric]
        guard let kind = preference.first(where: kinds.contains) else { return self }
        return answering(kind, options: options, range: range ?? 0...100, using: &rng)
    }

    /// The same room answering a question of `kind` with `options` options: each student's letter
    /// (taken modulo `options`) becomes an answer of that kind (the letter; true or false by its
    /// parity; a set holding it, sometimes with a neighbour; a ranking that puts it first and orders
    /// some of the others; a number in `range` that rises with it), so the room still leans towards
    /// one "right" answer.
    public func answering<G: RandomNumberGenerator>(_ kind: Answer.Kind, options: Int, range: ClosedRange<Int16> = 0...100,
                                                    using rng: inout G) -> Classroom {
        let options = max(1, min(options, Answer.maxOptions))
        func convert(_ a: Answer) -> Answer {
            let i = answerIndex(a) % UInt8(options)
            switch kind {
            case .choice: return .choice(i)
            case .trueFalse: return .trueFalse(i % 2 == 0)
            case .multiSelect:
                let extra = Bool.random(using: &rng) && options > 1 ? UInt8(1) << ((i + 1) % UInt8(options)) : 0
                return .multiSelect(UInt8(1) << i | extra)
            case .numeric:
                let span = Int(range.upperBound) - Int(range.lowerBound)
                let base = Int(range.lowerBound) + span * Int(i) / options
                let v = base + Int.random(in: 0...max(0, span / options), using: &rng)
                return .numeric(Int16(clamping: min(v, Int(range.upperBound))))
            case .ranking:
                let rest = (0..<UInt8(options)).filter { $0 != i }.shuffled(using: &rng)
                let order = [i] + rest.prefix(Int.random(in: 0...rest.count, using: &rng))
                return Ranking(order: order).map(Answer.ranking) ?? .choice(i)
            }
        }
        return Classroom(options: options, students: students.map { s in
            let final = convert(s.final)
            var alternate = convert(s.alternate)
            // Two letters can meet in one answer (true/false by parity, a numeric bucket): then any other.
            for k in 1..<max(2, options) where alternate == final { alternate = convert(.choice(answerIndex(s.final) &+ UInt8(k))) }
            return Student(thinkTime: s.thinkTime, answer: s.change == nil ? final : convert(s.answer),
                           change: s.change.map { ($0.after, final) }, alternate: alternate)
        })
    }

    init(options: Int, students: [Student]) {
        self.options = options
        self.students = students
    }

    /// Steady answer changes for load tests: after their own answers every student changes answer
    /// once per ``period``, phases spread evenly, so about `votesPerSecond` ballots arrive in all.
    public struct Churn: Sendable, Equatable {
        /// Time between two changes of one student.
        public let period: Duration
        let students: Int

        /// Nil when there is no student or the rate is not positive.
        public init?(votesPerSecond: Double, students: Int) {
            guard students > 0, votesPerSecond > 0, votesPerSecond.isFinite else { return nil }
            let seconds = Double(students) / votesPerSecond
            period = .nanoseconds(Int64(min(seconds, 86_400) * 1e9))
            self.students = students
        }

        /// Delay before student `i`'s first change, in `0..<period`.
        public func phase(of i: Int) -> Duration {
            period * (Double(i % students) / Double(students))
        }

    }

    /// Runs the room in real time until every student is done, then keeps them advertising
    /// until the task is cancelled or a graceful shutdown. `secret` is the poll's S, derived once
    /// for the whole room. `makeRadio(i)` gives student `i` its own peripheral radio.
    /// With `churn` (votes per second in all, in real time) students keep changing answers.
    public func run(secret: PollSecret, question: UInt8, timeScale: Double = 1, churn votesPerSecond: Double? = nil,
                    makeRadio: @Sendable @escaping (Int) -> any PeripheralTransport) async {
        await run(secret: secret, question: question, timeScale: timeScale, churn: votesPerSecond,
                  clock: ContinuousClock(), makeRadio: makeRadio)
    }

    /// ``run(secret:question:timeScale:churn:makeRadio:)`` with the students' waits on `clock`.
    public func run<C: Clock<Duration>>(secret: PollSecret, question: UInt8, timeScale: Double = 1,
                                        churn votesPerSecond: Double? = nil, clock: C,
                                        makeRadio: @Sendable @escaping (Int) -> any PeripheralTransport) async {
        let churn = votesPerSecond.flatMap { Churn(votesPerSecond: $0, students: students.count) }
        await withTaskGroup(of: Void.self) { group in
            for (i, s) in students.enumerated() {
                group.addTask {
                    let session = VoterSession(secret: secret, question: question, identity: DeviceKey.generate(),
                                               transport: makeRadio(i), state: nil,
                                               logger: Logger(label: "clicker.classroom", factory: { _ in SwiftLogNoOpLogHandler() }))
                    do {
                        try await clock.sleep(for: s.thinkTime * timeScale)
                        try await session.cast(s.answer)
                        if let c = s.change {
                            try await clock.sleep(for: c.after * timeScale)
                            try await session.cast(c.to)
                        }
                        if let churn {
                            // Back and forth between the student's own answer and another of its kind.
                            var answer = s.final
                            try await clock.sleep(for: churn.phase(of: i))
                            while !Task.isCancelled {
                                answer = answer == s.final ? s.alternate : s.final
                                try await session.cast(answer)
                                try await clock.sleep(for: churn.period)
                            }
                        }
                        // Keep advertising until the demo ends.
                        try await gracefulShutdown()
                    } catch {}
                    await session.stop()
                }
            }
        }
    }
}

private func answerIndex(_ a: Answer) -> UInt8 {
    if case .choice(let i) = a { return i }
    return 0
}

