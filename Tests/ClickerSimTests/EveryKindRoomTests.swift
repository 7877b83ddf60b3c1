import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import XCTest

/// A room of 300 on the simulated air answers a set with one question of each kind, one question
/// after another; every report goes through the real ingest pipeline. What the tally counts is
/// exactly what the students cast: per answer, per option and combination, the numbers, and the
/// instant-runoff rounds.
final class EveryKindRoomTests: XCTestCase {
    static let students = 300
    /// Seconds each question is open; a tenth of the students change their answer half-way.
    static let round = 15.0

    static let specs = [
        QuestionSpec(number: 1, options: 4, kinds: [.choice], title: "Single"),
        QuestionSpec(number: 2, options: 5, kinds: [.multiSelect], title: "Multi"),
        QuestionSpec(number: 3, options: 2, kinds: [.trueFalse], title: "True or false"),
        QuestionSpec(number: 4, kinds: [.numeric], title: "Numeric", numeric: NumericRange(decimals: 1, lowest: -20, highest: 100)),
        QuestionSpec(number: 5, options: 5, kinds: [.ranking], title: "Ranked, partial"),
    ]

    /// A random answer `spec` offers.
    static func answer(_ spec: QuestionSpec, _ rng: inout SplitMix64) -> Answer {
        switch spec.kinds.first {
        case .multiSelect?: return .multiSelect(UInt8.random(in: 1..<(1 << spec.options), using: &rng))
        case .trueFalse?: return .trueFalse(Bool.random(using: &rng))
        case .numeric?:
            let r = spec.numeric ?? NumericRange()
            return .numeric(Int16.random(in: r.lowest...r.highest, using: &rng))
        case .ranking?:
            let order = [UInt8](0..<UInt8(spec.options)).shuffled(using: &rng)
            let ranked = Array(order.prefix(Int.random(in: 1...spec.options, using: &rng)))
            return Ranking(order: ranked).map(Answer.ranking) ?? .choice(0)  // 1…5 distinct options: always a ranking
        default: return .choice(UInt8.random(in: 0..<UInt8(spec.options), using: &rng))
        }
    }

    func testRoomOf300AnswersOneQuestionOfEachKind() async throws {
        var rng = SplitMix64(seed: 14_300)
        let code = JoinCode.random(using: &rng)
        var sealers: [BallotSealer] = []
        var seen: Set<UInt32> = []
        while sealers.count < Self.students {
            let s = BallotSealer(secret: pollSecret(code), deviceKey: DeviceKey.generate(using: &rng))
            if seen.insert(s.voterID).inserted { sealers.append(s) }
        }
        // What each student casts: a first answer per question, and for some a second one.
        var first: [[Answer]] = [], final: [[Answer]] = [], changers: [[Bool]] = []
        for spec in Self.specs {
            var f: [Answer] = [], l: [Answer] = [], c: [Bool] = []
            for _ in 0..<Self.students {
                let a = Self.answer(spec, &rng)
                var b = a
                let change = Double.random(in: 0..<1, using: &rng) < 0.1
                if change { while b == a { b = Self.answer(spec, &rng) } }
                f.append(a); l.append(b); c.append(change)
            }
            first.append(f); final.append(l); changers.append(c)
        }
        XCTAssertTrue(final[4].contains { if case .ranking(let r) = $0 { r.order.count < 5 } else { false } }, "partial rankings cast")

        let air = SimulatedAir(AirConfiguration(seed: 14_300))
        let stream = air.central().advertisements(companyID: BallotFormat.companyID)
        let radios = (0..<Self.students).map { _ in air.addPeripheral() }
        func advertise(_ q: Int, _ answers: [Answer], sequence: UInt16, only: [Bool]? = nil) async throws {
            for (i, radio) in radios.enumerated() where only?[i] ?? true {
                let data = sealers[i].advertisement(question: Self.specs[q].number, sequence: sequence, answer: answers[i])
                try await radio.advertise(AdvertisingPayload(companyID: BallotFormat.companyID, data: data, interval: .milliseconds(100)))
            }
        }
        // Question q is on the air from q·round; the changes go out half-way through it; the room
        // falls silent for the last second, so that the tally moves to the next question between
        // two questions on the air, as an instructor does.
        for q in Self.specs.indices {
            let start = Double(q) * Self.round
            try await advertise(q, first[q], sequence: UInt16(2 * q + 1))
            air.run(until: at(start + Self.round / 2))
            try await advertise(q, final[q], sequence: UInt16(2 * q + 2), only: changers[q])
            air.run(until: at(start + Self.round - 1))
            for radio in radios { try await radio.stopAdvertising() }
            air.run(until: at(start + Self.round - 0.001))
        }
        let reports = try await drain(air, stream)

        // The tally opens each question when it goes on the air and closes the one before.
        var pipeline = IngestPipeline(secret: pollSecret(code))
        var open = -1
        for r in reports {
            let q = min(Self.specs.count - 1, Int(Double(r.timestamp.nanoseconds) / 1e9 / Self.round))
            if q != open {
                if open >= 0 { pipeline.tally.close(question: Self.specs[open].number) }
                pipeline.tally.open(Self.specs[q])
                open = q
            }
            _ = pipeline.ingest(r)
        }
        XCTAssertEqual(pipeline.tally.rejections, [:], "no report was rejected")

        for (q, spec) in Self.specs.enumerated() {
            let tally = try XCTUnwrap(pipeline.tally.question(spec.number))
            XCTAssertEqual(tally.voterCount, Self.students, "Q\(spec.number): every student counted")
            XCTAssertEqual(tally.changedVoters, changers[q].filter { $0 }.count, "Q\(spec.number): every change counted")
            // Each answer (each exact combination, number and ranking) as often as it was cast.
            XCTAssertEqual(tally.counts, Dictionary(final[q].map { ($0, 1) }, uniquingKeysWith: +), "Q\(spec.number)")
            // Each student's own answer.
            for (i, s) in sealers.enumerated() {
                XCTAssertEqual(tally.voters[VoterKey(mode: .anonymous, voterID: s.voterID)]?.answer, final[q][i])
            }
        }
        // Multi-select: each option as often as it was ticked.
        let ticks = (0..<5).map { o in final[1].filter { if case .multiSelect(let m) = $0 { m & (1 << o) != 0 } else { false } }.count }
        let counted = try XCTUnwrap(pipeline.tally.question(2)).counts
        XCTAssertEqual((0..<5).map { o in counted.reduce(0) { n, e in
            if case .multiSelect(let m) = e.key, m & (1 << o) != 0 { return n + e.value }
            return n
        } }, ticks)
        // Numeric: the very values cast.
        let values = try XCTUnwrap(pipeline.tally.question(4)).voters.values.compactMap { r -> Int16? in
            if case .numeric(let v) = r.answer { return v }
            return nil
        }
        XCTAssertEqual(values.sorted(), final[3].compactMap { if case .numeric(let v) = $0 { v } else { nil } }.sorted())
        // Ranked: the first round counts first preferences as cast, and every round is the count of
        // the rankings cast.
        let cast = final[4].compactMap { if case .ranking(let r) = $0 { r } else { nil } }
        let ranked = try XCTUnwrap(pipeline.tally.question(5)).voters.values.compactMap { r -> Ranking? in
            if case .ranking(let k) = r.answer { return k }
            return nil
        }
        let irv = InstantRunoff(options: 5, rankings: ranked)
        let firstPreferences = (0..<5).map { o in cast.filter { $0.order[0] == UInt8(o) }.count }
        XCTAssertEqual(irv.rounds.first?.votes, firstPreferences.map { Optional($0) })
        XCTAssertEqual(irv.rounds.first?.active, Self.students)
        XCTAssertEqual(irv, InstantRunoff(options: 5, rankings: cast))
        XCTAssertGreaterThan(irv.rounds.count, 1, "the count needed eliminations")
    }
}
