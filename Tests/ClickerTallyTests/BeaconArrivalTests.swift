import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import XCTest

/// The load from the rate of new voters, and when the tally believes it (``BeaconLoadEstimator``
/// `arrivalLoads`, ``TallyBeacon`` with extended acknowledgements; docs/PROTOCOL.md §11.11).
final class BeaconArrivalTests: XCTestCase {
    let poll = TestPoll()
    var key: BeaconKey { BeaconKey(poll.secret) }
    let q = BeaconQuestionInfo(number: 1, kind: .single, options: 4)
    let a = 0.000360  // BeaconAirModel.ballotAirTime

    /// New voters counted at the rate the model gives for U voters at period P (r = U/P·e^(−G),
    /// G = 2aU/P): the roots of the arrivals are G on its side of 1, an underloaded and an overloaded
    /// room giving the same rate.
    func testTheArrivalRateGivesTheLoadOnEitherRoot() {
        let period = 0.305
        for (u, side) in [(300, "low"), (1000, "high")] {
            let g = 2 * a * Double(u) / period
            let rate = Double(u) / period * exp(-g)
            var e = BeaconLoadEstimator()
            var owed = 0.0
            for step in 1...300 {  // 3 s in 10 ms steps
                owed += rate * 0.01
                let n = Int(owed)
                owed -= Double(n)
                e.observe(arrivals: n, at: UInt64(step) * 10_000_000)
            }
            let roots = try? XCTUnwrap(e.arrivalLoads(interval: .milliseconds(300), loudCounted: 0, broadcast: nil))
            let got = side == "low" ? roots?.low : roots?.high
            XCTAssertEqual(got ?? 0, g, accuracy: 0.05 * g, "\(u) voters at \(period) s: G = \(g), roots \(String(describing: roots))")
            XCTAssertLessThan(roots?.low ?? 2, 1)
            XCTAssertGreaterThan(roots?.high ?? 0, 1)
        }
        // Too little time observed, or a rate at the channel's best: no reading.
        var short = BeaconLoadEstimator()
        short.observe(arrivals: 5, at: 1)
        short.observe(arrivals: 5, at: 200_000_000)
        XCTAssertNil(short.arrivalLoads(interval: .milliseconds(100), loudCounted: 0, broadcast: nil))
        var best = BeaconLoadEstimator()
        for step in 1...100 { best.observe(arrivals: 6, at: UInt64(step) * 10_000_000) }  // 600 a second at 360 µs
        XCTAssertNil(best.arrivalLoads(interval: .milliseconds(100), loudCounted: 0, broadcast: nil))
    }

    /// A tally counts `rate` new voters a second for `seconds`, hears one in `every` again at its next
    /// event (the others quiet: their acknowledgement reached them), and sends a payload every 100 ms;
    /// returns the STATE interval it announces at the end.
    func announced(_ capabilities: BroadcastCapabilities, rate: Int, every: Int, seconds: Int) -> Int? {
        var t = TallyBeacon(key: key, mode: .anonymous, capabilities: capabilities)
        var last: Int?
        var next: UInt32 = 0
        var again: [(at: UInt64, voter: VoterKey)] = []
        for step in 1...(10 * seconds) {
            let now = UInt64(step) * 100_000_000
            for k in 0..<(rate / 10) {
                let at = now - 100_000_000 + UInt64(k) * (100_000_000 / UInt64(rate / 10))
                let v = VoterKey(mode: .anonymous, voterID: next)
                t.counted(v, question: 1, sequence: 1, at: at)
                if Int(next) % every == 0 {
                    let period = UInt64((last ?? 720) + 5) * 1_000_000
                    again.append((at + period, v))
                }
                next += 1
            }
            for r in again where r.at <= now { t.counted(r.voter, question: 1, sequence: 1, at: r.at) }
            again.removeAll { $0.at <= now }
            let p = t.payload(.open(q), tick: UInt32(step * 10), at: now)
            if case .success(.state(let s)) = BeaconCodec.open(p.frames[0], key: key) { last = s.interval.milliseconds }
        }
        return last
    }

    /// A room that quiets as it is acknowledged: new voters at 150 a second, a third heard again. The
    /// repeats read a load near 1 (the others went quiet, not lost); the arrivals read an underloaded
    /// channel. With extended acknowledgements the tally believes the arrivals and shortens the interval;
    /// with legacy ones (slow to arrive, so a voter not heard again was lost) it keeps the repeats' reading.
    func testWithQuickAcknowledgementsAQuietingRoomGetsAShortInterval() throws {
        let extended = try XCTUnwrap(announced(.extended, rate: 150, every: 3, seconds: 3))
        let legacy = try XCTUnwrap(announced(.legacy, rate: 150, every: 3, seconds: 3))
        XCTAssertLessThan(extended, 300, "extended: \(extended) ms")
        XCTAssertGreaterThan(legacy, 2 * extended, "legacy: \(legacy) ms, extended \(extended) ms")
    }

    /// An overloaded room: few new voters (10 a second) and almost none heard again. The arrivals alone
    /// would read an underloaded channel (their low root); the repeats say the load is far above their
    /// overloaded root, so the tally keeps a long interval either way.
    func testAnOverloadedRoomIsNotTakenForAQuietOne() throws {
        let extended = try XCTUnwrap(announced(.extended, rate: 10, every: 1_000_000, seconds: 4))
        XCTAssertGreaterThan(extended, 500, "extended: \(extended) ms")
    }
}
