import ClickerTransport
import ClickerWire
import Logging
import ServiceLifecycle
import Synchronization

extension Classroom {
    /// Runs the room following the poll's beacon, as real voters do (docs/PROTOCOL.md §11.10): each
    /// student is a ``BeaconFollower`` on its own radio, which listens; when a question opens, the
    /// student answers it after the think time (and changes once, if it does), from
    /// `answers(question)`: the room answering that question's kind. After `n` the room votes on
    /// the next question because the beacon said so. Runs until cancelled or a graceful shutdown.
    /// `clock` is the monotonic clock the students' followers and think times run on.
    public func follow(secret: PollSecret, timeScale: Double = 1, clock: some Clock<Duration> = ContinuousClock(),
                       answers: @Sendable @escaping (BeaconQuestion) async -> Classroom,
                       makeRadio: @Sendable @escaping (Int) -> any PeripheralTransport & ListenerTransport) async {
        let key = BeaconKey(secret)
        // The room checks the poll's key once (one scrypt), not once per student.
        let anchors = BeaconAnchorVerdicts()
        let clock = ElapsedClock(clock)
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                for i in students.indices {
                    group.addTask {
                        await Self.student(i, secret: secret, key: key, anchors: anchors, timeScale: timeScale, clock: clock,
                                           answers: answers, radio: makeRadio(i))
                    }
                }
            }
        }
    }

    enum StudentEvent: Sendable {
        case heard([UInt8])
        /// The think time of plan step `step` of question `question` is over.
        case due(question: UInt8, step: Int)
        /// A ballot's start (``StaggeredStart``) is due.
        case start
    }

    /// How a simulated student's radio listens for the beacon.
    static let studentListening = ScanDutyCycle.fast

    static func student(_ i: Int, secret: PollSecret, key: BeaconKey, anchors: BeaconAnchorVerdicts, timeScale: Double,
                        clock: ElapsedClock,
                        answers: @Sendable @escaping (BeaconQuestion) async -> Classroom,
                        radio: any PeripheralTransport & ListenerTransport) async {
        var sessions = Sessions(secret: secret, identity: DeviceKey.generate(), roster: false, transport: radio, state: nil,
                                logger: Logger(label: "clicker.classroom", factory: { _ in SwiftLogNoOpLogHandler() }),
                                start: .random())
        let now: @Sendable () -> Duration = { clock.now.offset }
        var follower = BeaconFollower(key: key, mode: .anonymous, voterID: await sessions.voterID(), now: now(), anchors: anchors)
        let (events, sink) = AsyncStream<StudentEvent>.makeStream()
        let backlog = FrameBacklog()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    // Half of a real voter's listening (`BeaconFollower.listening`): a room of 300 lives in the
                    // tally's own process for a demo, and every frame a student hears costs that process a decode.
                    for try await r in radio.listen(companyID: BallotFormat.companyID, dutyCycle: Self.studentListening) {
                        // A student whose loop lags misses frames, as a real receiver with a busy host does.
                        guard backlog.enter() else { continue }
                        sink.yield(.heard(r.data))
                    }
                } catch {}
                sink.finish()
            }
            // The start's timer (no test steps a room's students: a student that lags misses frames).
            let turns = FollowTurns()
            var question: UInt8?
            var plan: [(after: Duration, answer: Answer)] = []
            var timer: Task<Void, Never>?
            func schedule(_ step: Int, of q: UInt8) {
                guard step < plan.count else { return }
                let wait = plan[step].after * timeScale
                timer = Task {
                    try? await clock.sleep(for: wait)
                    if !Task.isCancelled { sink.yield(.due(question: q, step: step)) }
                }
            }
            for await e in events {
                switch e {
                case .heard(let d):
                    backlog.leave()
                    follower.hear(d, at: now())
                case .due(let q, let step):
                    guard q == question, step < plan.count else { break }
                    follower.answer(plan[step].answer)
                    schedule(step + 1, of: q)
                case .start:
                    break
                }
                if let q = follower.question?.beacon, q.number != question {
                    // A new question: think, answer, perhaps change once.
                    question = q.number
                    timer?.cancel()
                    let room = await answers(q)
                    plan = []
                    if i < room.students.count {
                        let s = room.students[i]
                        plan.append((s.thinkTime, s.answer))
                        if let c = s.change { plan.append((c.after, c.to)) }
                    }
                    schedule(0, of: q.number)
                }
                try? await sessions.apply(&follower, at: now())
                sessions.wake(on: clock, turns: turns, fire: { sink.yield(.start) })
            }
            timer?.cancel()
            group.cancelAll()
        }
        await sessions.stop()
    }
}

/// Beacon frames heard by one simulated student and not yet taken by its loop. Past ``limit`` the
/// student misses new ones, so that a room that falls behind (the demo room lives in the tally's
/// process, 300 students decoding every frame they hear) drops frames instead of queueing them
/// without bound. Frames repeat on the air, so a missed one comes again.
final class FrameBacklog: Sendable {
    static let limit = 4
    private let waiting = Atomic<Int>(0)

    /// Whether a new frame may wait (one producer: the check and the add need not be one step).
    func enter() -> Bool {
        guard waiting.load(ordering: .relaxed) < Self.limit else { return false }
        waiting.add(1, ordering: .relaxed)
        return true
    }

    func leave() { waiting.subtract(1, ordering: .relaxed) }
}
