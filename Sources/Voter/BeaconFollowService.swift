import ClickerTransport
import ClickerWire
import Logging
import ServiceLifecycle

/// `clicker-vote <join-code>` without `--question`: listens to the tally's beacon and runs a
/// ``BeaconFollower`` on what it hears, the answers that arrive as lines, and the time; casts the
/// ballot it asks for through one ``VoterSession`` per question (each new ballot a new sequence),
/// at the interval it asks for, and reports every change of status (docs/PROTOCOL.md §11.10).
///
/// The radio must also listen (`ListenerTransport`). Its listen stream may end (bluetoothd went
/// away, the simulated air's host with it: ``ReopeningRadio``): it is opened again after
/// ``relistenDelay(after:)``. Runs until a graceful shutdown.
public struct BeaconFollowService: Service {
    public static let relistenDelay: Duration = .seconds(1)
    /// The longest wait between two tries to listen again while they keep failing.
    public static let longestRelistenDelay: Duration = .seconds(8)

    /// The wait before listening again after `failures` failed tries in a row (none: the stream
    /// ended): ``relistenDelay``, doubled per failure beyond the first, at most ``longestRelistenDelay``.
    public static func relistenDelay(after failures: Int) -> Duration {
        min(relistenDelay * (1 << min(max(failures - 1, 0), 16)), longestRelistenDelay)
    }

    let secret: PollSecret
    let identity: DeviceKey
    let roster: Bool
    let transport: any PeripheralTransport
    let state: StateDirectory?
    let lines: AsyncStream<String>
    let first: String?
    let report: @Sendable (FollowReport) -> Void
    let notSending: @Sendable (NotSending) -> Void
    let logger: Logger
    /// The monotonic clock the follower runs on: its timers sleep on it and it reads the time from it.
    let clock: ElapsedClock
    let tick: Duration
    let start: StaggeredStart
    let turns: FollowTurns

    /// - Parameters:
    ///   - lines: answers, one a line; read with the open question's ``AnswerForm``.
    ///   - first: the answer given on the command line: cast, once shown, for the first question
    ///     that opens and takes it; an answer typed before then replaces it.
    ///   - report: every new status, once; each open question once, with its title when its text
    ///     arrives within ``textWait``, and once more when its title arrives later (``FollowReport``).
    ///   - notSending: why the answer is not on the air, shown in place of "sending" (once; the
    ///     status is reported again once it is on the air).
    ///   - clock: the monotonic clock the follower runs on: the time it reads, and every wait (ticks,
    ///     the start of a ballot, listening again).
    ///   - tick: how often the clock is looked at while something waits for time to pass (no STATE yet:
    ///     ``BeaconFollower/Status/noBeacon``; sending: backing off; a question's text; the roster hint;
    ///     a ballot that cannot go on the air), and only then: an idle follower (counted, question closed,
    ///     poll closed) has no timer, and wakes only for what it hears and reads.
    ///   - start: when a ballot goes on the air: at a random moment of its interval (``StaggeredStart``).
    ///   - turns: where the follower stands (``FollowTurns``): a test that moves `clock` waits until it has
    ///     acted on what reached it at the current instant.
    public init(secret: PollSecret, identity: DeviceKey, roster: Bool, transport: any PeripheralTransport,
                state: StateDirectory?, lines: AsyncStream<String>, first: String? = nil,
                report: @escaping @Sendable (FollowReport) -> Void,
                notSending: @escaping @Sendable (NotSending) -> Void = { _ in },
                logger: Logger = Logger(label: "clicker.voter"),
                clock: some Clock<Duration> = ContinuousClock(),
                tick: Duration = .milliseconds(500), start: StaggeredStart = .random(),
                turns: FollowTurns = FollowTurns()) {
        self.secret = secret
        self.identity = identity
        self.roster = roster
        self.transport = transport
        self.state = state
        self.lines = lines
        self.first = first
        self.report = report
        self.notSending = notSending
        self.logger = logger
        self.clock = ElapsedClock(clock)
        self.tick = tick
        self.start = start
        self.turns = turns
    }

    /// How long a roster ballot goes unacknowledged before the student is told why that may be: in a
    /// full room of 1,000 the last voter is counted after about 4.9 s and 99 % see *counted* within 3 s
    /// of being counted (docs/SIMULATION.md, 20 seeds), a device the class list does not hold never does
    /// (the tally cannot authenticate its ballots, PROTOCOL.md §8).
    public static let rosterHintAfter: Duration = .seconds(15)
    /// How long a new question's title and options may take to arrive (TEXT pages, sent before
    /// acknowledgements once a question opens) before the question is shown without them; it is shown
    /// again once they arrive.
    public static let textWait: Duration = .seconds(3)

    enum Event: Sendable {
        case heard([UInt8])
        case line(String)
        case tick
    }

    public func run() async throws {
        defer { turns.end() }
        guard let listener = transport as? any ListenerTransport else { throw VoterError.cannotListen }
        let (events, sink) = AsyncStream<Event>.makeStream()
        let logger = self.logger, tick = self.tick, lines = self.lines, clock = self.clock, turns = self.turns
        let now: @Sendable () -> Duration = { clock.now.offset }
        let post: @Sendable (Event) -> Void = { event in
            turns.posted(event)
            sink.yield(event)
        }
        turns.begin(on: clock)
        let listening = Task {
            var failures = 0
            while !Task.isCancelled {
                do {
                    let reports = listener.listen(companyID: BallotFormat.companyID, dutyCycle: BeaconFollower.listening)
                    turns.listening()
                    for try await r in reports {
                        failures = 0
                        post(.heard(r.data))
                    }
                } catch {
                    failures += 1
                    logger.notice("""
                        listening for the beacon stopped (\(error)); listening again in \
                        \(Self.relistenDelay(after: failures).components.seconds) s
                        """)
                }
                try? await clock.sleep(for: Self.relistenDelay(after: failures))
            }
        }
        let reading = Task {
            for await line in lines { post(.line(line)) }
        }
        defer { listening.cancel(); reading.cancel() }

        let mode: BallotMode = roster ? .roster : .anonymous
        let sessionsSeed = Sessions(secret: secret, identity: identity, roster: roster, transport: transport, state: state,
                                    logger: logger, start: start)
        let key = BeaconKey(secret), report = self.report, notSending = self.notSending, first = self.first
        await cancelWhenGracefulShutdown {
            var sessions = sessionsSeed
            var follower = BeaconFollower(key: key, mode: mode, voterID: await sessions.voterID(), now: now())
            var screen = FollowScreen(first: first, wait: Self.textWait, status: follower.status)
            report(.status(follower.status, question: nil))
            // Why the ballot the follower asks for is not on the air (nil: it is, or none is asked for),
            // and the reason shown in place of "sending".
            var fault: NotSending?
            var faultShown: NotSending?
            // When to say why a roster ballot is still not counted (nil: nothing to say).
            var hintAt: Duration? = nil
            var relistens = 0
            var signedSaid = false
            // Ticks while something waits for time to pass, none otherwise (``tick``); each timer is set
            // before its task runs, for a tick after the instant it is set at.
            var ticking: Task<Void, Never>?
            func tickWhile(_ needed: Bool) {
                if needed, ticking == nil {
                    let first = turns.set(clock.now.advanced(by: tick))
                    ticking = Task {
                        var timer = first
                        while await turns.wait(timer, on: clock) {
                            post(.tick)
                            let fired = timer
                            timer = turns.set(clock.now.advanced(by: tick))
                            turns.clear(fired)
                        }
                    }
                } else if !needed, let t = ticking {
                    t.cancel()
                    ticking = nil
                }
            }
            tickWhile(follower.awaitsTime)
            // Tries of the radio after it refused, backing off, and the wake-up for the next one.
            var retry = RadioRetry()
            var retryWake: Task<Void, Never>?
            defer { retryWake?.cancel() }
            turns.looping()
            for await event in events {
                defer { turns.handled() }
                switch event {
                case .heard(let bytes): follower.hear(bytes, at: now())
                case .tick: follower.tick(at: now())
                case .line(let line):
                    let text = line.trimmingWhitespace()
                    if text.isEmpty { continue }
                    do {
                        let answer = try Self.parse(text, for: follower.question)
                        // A typed answer replaces the one given on the command line (a line that is no
                        // answer does not).
                        screen.first = nil
                        if !FollowScreen.isOpen(follower.status) {
                            report(.note("\(answer) will be sent when a question opens."))
                        }
                        follower.answer(answer)
                    } catch {
                        if let a = try? Answer(parsing: text) {
                            follower.refuse(a)
                        } else {
                            report(.note("\(VoterService.excerpt(text)) is not an answer: \(Self.explain(error)). Type another answer."))
                        }
                        logger.error("\(VoterService.excerpt(text)): \(VoterService.excerpt("\(error)", limit: 160))")
                    }
                }
                let shows = screen.update(&follower, at: now()) { text, q in try? Self.parse(text, for: q) }
                // A loop that is being cancelled asks the radio nothing (each call would end at once in a
                // CancellationError, and bluetoothd would still get the registration).
                if !Task.isCancelled, retry.due(at: now()) {
                    fault = await Self.apply(&sessions, &follower, at: now(), failing: fault, logger: logger)
                    if fault != nil {
                        let timer = turns.set(clock.now.advanced(by: retry.failed(at: now())))
                        retryWake?.cancel()
                        retryWake = Task {
                            guard await turns.wait(timer, on: clock) else { return }
                            post(.tick)
                            turns.clear(timer)
                        }
                    } else {
                        retry.succeeded()
                    }
                }
                sessions.wake(on: clock, turns: turns, fire: { post(.tick) })
                if !signedSaid, follower.admission.publicKey != nil {
                    // Once: from now on only frames signed by the tally count (docs/SECURITY.md).
                    signedSaid = true
                    logger.notice("the beacon is signed: its key matches the join code, so only the tally's own frames count from now on")
                }
                if follower.relistens != relistens {
                    // Said once; it goes on for as long as an attacker sends (docs/SECURITY.md).
                    if relistens == 0 { logger.notice("""
                        the beacon's frames contradict the ones this voter took (old frames replayed?) and nothing \
                        was acknowledged: listening again for the tally's newest
                        """) }
                    relistens = follower.relistens
                }
                for r in shows {
                    // While the ballot is off the air "sending" is not shown; why it is not is (below).
                    if fault != nil, case .status(.sending, _) = r { continue }
                    report(r)
                    guard case .status(let s, _) = r else { continue }
                    hintAt = nil
                    if roster, case .sending = s { hintAt = now() + Self.rosterHintAfter }
                }
                // "Sending" with nothing on the air: why, once; "sending" again once it is on the air.
                let offAir: NotSending? = if case .sending = follower.status { fault } else { nil }
                if offAir != faultShown {
                    if let f = offAir {
                        notSending(f)
                    } else if case .sending = follower.status {
                        report(.status(follower.status, question: follower.question))
                    }
                    faultShown = offAir
                }
                // A roster ballot that stays unacknowledged: say once what the likely cause is.
                if let at = hintAt, now() >= at {
                    hintAt = nil
                    let hint = """
                        not counted after \(Self.rosterHintAfter.components.seconds) s: a roster poll counts only \
                        devices on the class list; if this goes on, ask the instructor whether this device's \
                        enrollment code (clicker-vote enroll) was imported
                        """
                    logger.warning("\(hint)")
                    report(.note("Not counted yet after \(Self.rosterHintAfter.components.seconds) s. A roster poll counts only "
                                 + "devices on the class list: if this goes on, ask the instructor whether this device's "
                                 + "enrollment code (clicker-vote enroll) was imported."))
                }
                tickWhile(follower.awaitsTime || screen.awaitsTime || hintAt != nil || fault != nil)
            }
            ticking?.cancel()
            await sessions.stop()
        }
    }

    /// Puts on the air what `follower` asks for; returns why it is not (nil: it is). A new reason is
    /// logged once, not at every event while it lasts (a full disk would repeat it twice a second).
    static func apply(_ sessions: inout Sessions, _ follower: inout BeaconFollower, at now: Duration,
                      failing: NotSending?, logger: Logger) async -> NotSending? {
        do {
            try await sessions.apply(&follower, at: now)
            if failing != nil { logger.notice("the answer is on the air again") }
            return nil
        } catch {
            let why = NotSending(error)
            if why != failing { logger.error("not sending: \(why.detail)") }
            return why
        }
    }

    /// Why a typed line is no answer, and what the open question takes (its letters, not the wire's A to H).
    static func explain(_ error: any Error) -> String {
        if let r = error as? AnswerRefusal { return "\(r.reason); it takes \(r.takes)" }
        return "\(error)"
    }

    /// A typed line as an answer: with the form of the open question when there is one, so a line
    /// it does not offer is refused with what it takes.
    /// A numeric question is read in its decimals and checked against its range (both in its text
    /// block, version 4); before they arrive, a number is read as typed and waits for them.
    public static func parse(_ text: String, for question: BeaconFollower.Question?) throws -> Answer {
        guard let question else { return try Answer(parsing: text) }
        let q = question.beacon
        if q.kind == .numeric {
            guard let form = question.numeric else {
                if question.awaitsForm {
                    throw AnswerRefusal(reason: "the question's range has not arrived yet; type the answer again in a moment",
                                        takes: "a number")
                }
                return try AnswerForm(kind: .numeric).answer(text)
            }
            return try AnswerForm(kind: .numeric, decimals: Int(form.decimals), range: form.range).answer(text)
        }
        return try AnswerForm(kind: q.kind, options: q.kind.hasOptions ? Int(q.options) : 4).answer(text)
    }
}

/// The voter sessions of a follower: one per question, all on one radio; casts each new ballot
/// generation once and changes the interval of the ballot on the air.
struct Sessions {
    let secret: PollSecret
    let identity: DeviceKey
    let roster: Bool
    let transport: any PeripheralTransport
    let state: StateDirectory?
    let logger: Logger
    var session: VoterSession?
    var generation: UInt64?
    var interval: Duration?
    var onAir = false
    /// When the follower's wishes go on the air (a ballot starts at a random moment of its interval).
    var start: StaggeredStart

    init(secret: PollSecret, identity: DeviceKey, roster: Bool, transport: any PeripheralTransport,
         state: StateDirectory?, logger: Logger, start: StaggeredStart) {
        self.secret = secret
        self.identity = identity
        self.roster = roster
        self.transport = transport
        self.state = state
        self.logger = logger
        self.start = start
    }

    /// The wake-up at the start of the ballot waiting to go on the air.
    var alarm: (at: Duration, task: Task<Void, Never>)?

    /// When a ballot waits to go on the air, has `fire` run once `clock` reaches its start (the
    /// caller applies again then); a wake-up set for another start is cancelled.
    mutating func wake(on clock: ElapsedClock, turns: FollowTurns, fire: @escaping @Sendable () -> Void) {
        guard let at = start.startAt, alarm?.at != at else { return }
        alarm?.task.cancel()
        let timer = turns.set(ElapsedClock.Instant(offset: at))
        alarm = (at, Task {
            guard await turns.wait(timer, on: clock) else { return }
            fire()
            turns.clear(timer)
        })
    }

    func make(_ question: UInt8) -> VoterSession {
        VoterSession(secret: secret, question: question, identity: identity, roster: roster,
                     transport: transport, state: state, logger: logger)
    }

    /// The voter ID of this device in this poll (the same for every question).
    func voterID() async -> UInt32 { await make(0).voterID }

    /// Makes the radio advertise what `follower` asks for, once its start is due at `now`.
    mutating func apply(_ follower: inout BeaconFollower, at now: Duration) async throws {
        switch start.update(follower.advertising, at: now) {
        case .silent:
            guard onAir, let s = session else { return }
            onAir = false
            try await s.silence()
        case .ballot(let question, let answer, let g, let iv):
            let s: VoterSession
            if let current = session, current.question == question { s = current } else { s = make(question); session = s }
            if g != generation {
                let b = try await s.cast(answer, interval: iv)
                follower.sealed(generation: g, sequence: b.sequence)
                generation = g
            } else if iv != interval || !onAir {
                try await s.readvertise(interval: iv)
            } else {
                return
            }
            interval = iv
            onAir = true
        }
    }

    func stop() async {
        alarm?.task.cancel()
        if let session { await session.stop() } else { await transport.shutdown() }
    }
}
