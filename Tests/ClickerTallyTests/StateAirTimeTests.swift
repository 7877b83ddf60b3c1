@testable import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import XCTest

/// STATE by time on the air (docs/DESIGN.md, "Sending the beacon: this tally", "The payload"): whatever a frame costs on the radio's air, no
/// more than ``BeaconComposer/Tuning/stateSpacing`` passes between STATE frames while a question is open,
/// and the ACKS and TEXT frames share the rest.
final class StateAirTimeTests: XCTestCase {
    let poll = TestPoll()
    var key: BeaconKey { BeaconKey(poll.secret) }
    let question = BeaconQuestionInfo(number: 2, kind: .single, options: 4,
                                      text: QuestionText(title: "Which of these planets has the most moons today?",
                                                         options: ["Mercury", "Venus", "Jupiter", "Saturn"]))

    /// A radio whose host changes the frame, as bluetoothd's beacon does: a new payload's first frame goes
    /// on the air at once, and each frame holds it for `frameTime` before the next replaces it.
    struct HostRotatedRadio {
        let frameTime: UInt64
        var frames: [[UInt8]] = []
        var index = 0
        var nextChange: UInt64 = .max
        /// Every frame that went on the air, and when (ms).
        var shown: [(at: UInt64, frame: [UInt8])] = []

        mutating func replace(_ p: BroadcastPayload, at t: UInt64) {
            frames = p.frames
            index = 0
            shown.append((t, frames[0]))
            nextChange = t + frameTime
        }

        mutating func run(until t: UInt64) {
            while nextChange <= t, !frames.isEmpty {
                index = (index + 1) % frames.count
                shown.append((nextChange, frames[index]))
                nextChange += frameTime
            }
        }
    }

    struct Run {
        var stateGaps: [UInt64] = []
        var frames = 0
        var stateFrames = 0
        var acksFrames = 0
        var textFrames = 0
        /// The interval each payload announced, when it changed (ms).
        var intervals: [(at: UInt64, interval: BeaconInterval)] = []

        /// Changes of the announced interval within the first `ms` (the first announcement is none).
        func changes(within ms: UInt64) -> Int { max(0, intervals.filter { $0.at <= ms }.count - 1) }
    }

    /// `voters` cast over the first 3 s of an open question and advertise at the announced interval (an
    /// event every interval + 0–10 ms), each report lost half the time, until 2 s after they were first
    /// counted (a room whose acknowledgements come slowly);
    /// the tally composes by the daemon's rules (`PollController.runBeacon`: at most one payload per
    /// 100 ms, one when ballots were counted, every 250 ms while acknowledgements rotate or the broadcast
    /// is fast, every second at least) for a radio whose frames each hold the air `frameTime` ms.
    func run(voters: Int, frameTime: UInt64, capabilities: BroadcastCapabilities, seconds: UInt64 = 8,
             tuning: TallyBeacon.Tuning = TallyBeacon.Tuning()) -> Run {
        var tally = TallyBeacon(key: key, mode: .anonymous, capabilities: capabilities, tuning: tuning)
        var radio = HostRotatedRadio(frameTime: frameTime)
        var rng = SplitMix64(seed: 39)
        var next = (0..<voters).map { _ in rng.next() % 3000 }  // each voter's next event (ms)
        var counted = [UInt64?](repeating: nil, count: voters)
        var lastPayload: UInt64?
        var lastInterval: Duration?
        var result = Run()
        for t in stride(from: UInt64(0), through: seconds * 1000, by: 10) {
            radio.run(until: t)
            let period = UInt64(tally.interval.milliseconds ?? 20)
            for v in 0..<voters where next[v] <= t {
                if let c = counted[v], t > c + 2000 { continue }
                next[v] = t + period + rng.next() % 11
                guard rng.next() % 2 == 0 else { continue }
                if counted[v] == nil { counted[v] = t }
                tally.counted(VoterKey(mode: .anonymous, voterID: UInt32(v + 1)), question: 2, sequence: 1,
                              at: t * 1_000_000)
            }
            if let last = lastPayload, t < last + 100 { continue }
            let refreshing = tally.composer.acknowledgementsInRotation > 0 || lastInterval == tally.tuning.composer.fastInterval
                || lastPayload.map { t >= $0 + 1000 } ?? true
            let due = lastPayload.map { (t - $0) % 250 < 10 || t >= $0 + 250 } ?? true
            guard tally.hasPending || lastPayload == nil || (due && refreshing) else { continue }
            let p = tally.payload(.open(question), tick: UInt32(t / 10) + 1, at: t * 1_000_000)
            radio.replace(p, at: t)
            lastPayload = t
            lastInterval = p.interval
            if result.intervals.last?.interval != tally.interval { result.intervals.append((t, tally.interval)) }
        }
        var lastState: UInt64?
        for (at, bytes) in radio.shown {
            guard case .success(let frame) = BeaconCodec.open(bytes, key: key) else { continue }
            result.frames += 1
            switch frame {
            case .state:
                result.stateFrames += 1
                if let l = lastState { result.stateGaps.append(at - l) }
                lastState = at
            case .acks: result.acksFrames += 1
            case .text: result.textFrames += 1
            }
        }
        if let l = lastState { result.stateGaps.append(seconds * 1000 - l) }
        return result
    }

    /// What bluetoothd's beacon says a frame costs (`BlueZBeacon.frameChangeCost`, at least 150 ms).
    static func bluez(_ c: BroadcastCapabilities) -> BroadcastCapabilities {
        c.withFrameTime(slack: .milliseconds(50), minimum: .milliseconds(150))
    }

    /// 600 voters through a radio that takes 150 ms per frame (bluetoothd), legacy and extended frames:
    /// STATE never more than 1 s apart (0.5 s planned), and at least half the frames go to ACKS and TEXT.
    /// Before the tally scheduled STATE by time on the air it counted one frame in ten as if each took one
    /// 20 ms event; through such a radio STATE then went out seconds apart (4.46 s, 1.99 s and 3.33 s in the
    /// runs of issue 39). The control below, the radio's frame time stated as one 20 ms event, shows it.
    func testStateIsNeverMoreThanASecondApartOnARadioThatTakes150msPerFrame() {
        let extended = BroadcastCapabilities(maxFrameLength: 222, extended: true)
        for caps in [BroadcastCapabilities(maxFrameLength: 24, extended: false), extended] {
            let r = run(voters: 600, frameTime: 150, capabilities: Self.bluez(caps))
            let worst = r.stateGaps.max() ?? .max
            XCTAssertLessThanOrEqual(worst, 1000, "largest STATE gap \(worst) ms (\(caps.extended ? "extended" : "legacy"))")
            XCTAssertGreaterThan(r.acksFrames, 0)
            print("\(caps.extended ? "extended" : "legacy"): \(r.stateFrames) STATE, \(r.acksFrames) ACKS, \(r.textFrames) TEXT; worst gap \(worst) ms")
            XCTAssertGreaterThanOrEqual(r.acksFrames + r.textFrames, r.frames / 2,
                                        "STATE took \(r.stateFrames) of \(r.frames) frames (\(caps.extended ? "extended" : "legacy"))")
        }
        // Control: the same room with the frame time stated as one 20 ms event and the interval undamped (what
        // the tally did before).
        var before = TallyBeacon.Tuning()
        before.damping.hold = .zero
        before.damping.reversalHold = .zero
        let control = run(voters: 600, frameTime: 150, capabilities: BroadcastCapabilities(maxFrameLength: 24, extended: false),
                          tuning: before)
        XCTAssertGreaterThan(control.stateGaps.max() ?? 0, 1000,
                             "the scenario no longer starves STATE when the frame time is wrong: \(control.stateFrames) STATE of \(control.frames), gaps \(control.stateGaps)")
    }

    /// The issue's scenario, legacy frames through bluetoothd on question 2: the announced interval moves
    /// at most 4 times in the question's first 5 s. Without the damping's holds (a change whenever the new
    /// choice is off by a fifth, as before) it swings more often.
    func testTheAnnouncedIntervalDoesNotSwing() {
        let legacy = Self.bluez(BroadcastCapabilities(maxFrameLength: 24, extended: false))
        let r = run(voters: 600, frameTime: 150, capabilities: legacy)
        let changes = r.changes(within: 5000)
        let shown = r.intervals.map { "\($0.at) ms: \($0.interval)" }.joined(separator: ", ")
        XCTAssertLessThanOrEqual(changes, 4, shown)
        var undamped = TallyBeacon.Tuning()
        undamped.damping.reversalHold = .zero
        undamped.damping.hold = .zero
        let control = run(voters: 600, frameTime: 150, capabilities: legacy, tuning: undamped)
        XCTAssertGreaterThan(control.changes(within: 5000), changes,
                             control.intervals.map { "\($0.at) ms: \($0.interval)" }.joined(separator: ", "))
        print("damped: \(shown)\nundamped: \(control.intervals.map { "\($0.at) ms: \($0.interval)" }.joined(separator: ", "))")
    }

    /// The composer places STATE by the radio's frame time: every tenth frame at 25 ms (20 ms + advDelay),
    /// every third at 150 ms, at most 0.5 s apart in both.
    func testStateSpacingFollowsTheFrameTime() {
        var composer = BeaconComposer(key: key, mode: .anonymous, capabilities: .legacy)
        XCTAssertEqual(composer.stateEvery(frameTime: 25), 10)
        XCTAssertEqual(composer.stateEvery(frameTime: 150), 3)
        XCTAssertEqual(composer.stateEvery(frameTime: 600), 1)
        composer.acknowledge((1...30).map { key.fingerprint(voterID: $0, question: 2, sequence: 1) }, question: 2, at: 0)
        let p = composer.compose(.open(question), interval: BeaconInterval(milliseconds: 100)!, at: 0)
        let states = p.frames.indices.filter { if case .success(.state) = BeaconCodec.open(p.frames[$0], key: key) { true } else { false } }
        XCTAssertEqual(states.first, 0)
        XCTAssertEqual(Set(zip(states.dropFirst(), states).map { $0 - $1 }), [10])
    }
}
