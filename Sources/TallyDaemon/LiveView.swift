import AsyncAlgorithms
import Foundation
import Synchronization
import TerminalView

/// The full-screen live view on a terminal: keys drive the poll, frames are redrawn only on change,
/// at most ten a second, writing only the changed cells.
///
/// `run` is the whole loop, woken by keys, by the poll's change notices and by a one-second tick
/// for the clocks on screen; `step` is one pass of it, so a benchmark or a test can drive the loop
/// itself, pass by pass, on a clock of its own, and check what each pass does.
public struct LiveView {
    /// How often the ViewLoop benchmark passes (the live loop itself is woken by events).
    public static let passInterval: Duration = .milliseconds(50)
    /// How long an action's message stays on the status line (it also goes when the question changes).
    public static let statusLifetime: Duration = .seconds(15)

    private var screen: LiveScreen
    private var state = ViewState()
    private var decoder = KeyDecoder()
    private var model: TallyViewModel?
    private var status: (text: String, question: Int?, shownSince: Duration)?
    private var lastNotice = 0
    private let elapsed: @Sendable () -> Duration
    private let log: LogRoute?
    /// Whether `q` asks first while a question is open (not for `watch`, which only detaches).
    private let quitNeedsConfirmation: Bool
    /// Students in a simulated room, shown against the voters counted.
    public var simulatedRoom: Int?

    /// A view that honours NO_COLOR (and TERM=dumb) from `environment`, timed by `clock`.
    /// - Parameters:
    ///   - log: while the view runs, its latest notice is shown on the status line.
    ///   - quitNeedsConfirmation: `q` asks first while a question is open (quitting ends the poll).
    public init(environment: [String: String], clock: some Clock<Duration> = ContinuousClock(), log: LogRoute? = nil,
                quitNeedsConfirmation: Bool = true) {
        screen = LiveScreen(encoder: ANSIEncoder(color: ANSIEncoder.colorAllowed(environment: environment)))
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        self.log = log
        self.quitNeedsConfirmation = quitNeedsConfirmation
        lastNotice = log?.latest?.sequence ?? 0
    }

    /// What one pass did.
    public enum Pass: Sendable, Equatable {
        /// Nothing to show yet (no answer from the poll so far).
        case waiting
        /// A frame of this many bytes was written (0: unchanged).
        case shown(bytes: Int)
        /// Something changed but frames are rate-limited: pass again after this delay.
        case pending(retryAfter: Duration)
        /// The operator quit.
        case quit
    }

    /// One pass: reads pending keys and resizes without waiting, then `step(_:terminal:events:exportDirectory:)`.
    public mutating func step(_ poll: any PollControl, terminal: TerminalSession, exportDirectory: String) async -> Pass {
        let events = terminal.readEvents(timeout: .zero, decoder: &decoder)
        return await step(poll, terminal: terminal, events: events, exportDirectory: exportDirectory)
    }

    /// One pass: handles `events`, reads the poll, writes the changed cells.
    public mutating func step(_ poll: any PollControl, terminal: TerminalSession, events: [TerminalEvent],
                              exportDirectory: String) async -> Pass {
        for event in events {
            switch event {
            case .key(let key):
                let open = quitNeedsConfirmation && (model?.question?.isOpen ?? false)
                if let action = state.handle(key, questionOpen: open) {
                    if action == .quit { return .quit }
                    let text = await poll.perform(action, exportDirectory: exportDirectory)
                    // Stamped with the question after the action, so that `n` keeps its own message.
                    let after = try? await poll.viewModel(status: nil)
                    status = text.map { ($0, after?.question?.number, elapsed()) }
                }
            case .resize:
                screen.invalidate()
            case .endOfInput:
                break
            }
        }
        if let notice = log?.latest, notice.sequence != lastNotice {
            lastNotice = notice.sequence
            status = (notice.text, model?.question?.number, elapsed())
        }
        do {
            var next = try await poll.viewModel(status: nil)
            // Messages go stale: after `statusLifetime`, or once another question is up.
            if let s = status, elapsed() - s.shownSince >= Self.statusLifetime || s.question != next.question?.number {
                status = nil
            }
            next.status = [status?.text, next.status].compactMap { $0 }.first
            next.simulatedRoom = simulatedRoom
            model = next
        } catch {
            // The daemon went away (watch): keep the last picture and say so.
            model?.alert = "lost the daemon: \(error)"
        }
        guard let shown = model else { return .waiting }
        let size = terminal.size() ?? TerminalSize(width: 80, height: 24)
        switch screen.tick(model: shown, state: state, width: size.width, height: size.height, now: elapsed()) {
        case .draw(let bytes):
            if !bytes.isEmpty { await terminal.write(bytes) }
            return .shown(bytes: bytes.count)
        case .throttled(let wait):
            return .pending(retryAfter: wait)
        case .unchanged:
            return .shown(bytes: 0)
        }
    }

    /// What wakes the loop.
    enum Wake: Sendable {
        case input([TerminalEvent])
        case update
    }

    /// Runs until the operator quits (returns) or the task is cancelled; its tick, frame pacing and
    /// the clocks on screen run on `clock` (the poll's, when the view runs in the tally's process).
    public static func run(_ poll: any PollControl, terminal: TerminalSession, exportDirectory: String,
                           environment: [String: String], log: LogRoute? = nil, quitNeedsConfirmation: Bool = true,
                           simulatedRoom: Int? = nil, clock: some Clock<Duration>) async {
        var view = LiveView(environment: environment, clock: clock, log: log, quitNeedsConfirmation: quitNeedsConfirmation)
        view.simulatedRoom = simulatedRoom
        let (wakes, wake) = AsyncStream<Wake>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await events in TerminalInput.events(terminal) { wake.yield(.input(events)) }
            }
            group.addTask {
                // At most one frame's worth of wake-ups: the screen draws at most ten a second anyway.
                for await _ in coalescedUpdates(of: { poll.changes() }, every: FramePacer().minimumInterval, settle: nil,
                                                clock: clock) { wake.yield(.update) }
            }
            if let log {
                group.addTask { for await _ in log.notices.subscribe() { wake.yield(.update) } }
            }
            group.addTask {
                // The clocks on screen (open for m:ss, discovery restarted Ns ago), and a poll still
                // without an answer (watch, before the daemon replies).
                for await _ in AsyncTimerSequence(interval: .seconds(1), clock: clock) { wake.yield(.update) }
            }
            var retry: Task<Void, Never>?
            var pass = await view.step(poll, terminal: terminal, events: [], exportDirectory: exportDirectory)
            loop: for await w in wakes {
                if case .quit = pass { break loop }
                var events: [TerminalEvent] = []
                if case .input(let e) = w { events = e }
                pass = await view.step(poll, terminal: terminal, events: events, exportDirectory: exportDirectory)
                switch pass {
                case .quit: break loop
                case .pending(let after):
                    if retry == nil {
                        retry = Task {
                            try? await clock.sleep(for: after)
                            wake.yield(.update)
                        }
                    }
                case .waiting, .shown:
                    break
                }
                if let r = retry, case .shown = pass { r.cancel(); retry = nil }
            }
            retry?.cancel()
            wake.finish()
            group.cancelAll()
        }
    }
}

/// Keys and resizes read on a thread of their own (poll(2) blocks), as an async stream. The thread
/// ends when the stream's consumer stops (it is woken with `TerminalSession.interruptRead`) or at
/// the end of the input.
enum TerminalInput {
    static func events(_ terminal: TerminalSession) -> AsyncStream<[TerminalEvent]> {
        let (stream, continuation) = AsyncStream<[TerminalEvent]>.makeStream()
        let stop = StopFlag()
        continuation.onTermination = { _ in
            stop.set()
            terminal.interruptRead()
        }
        let thread = Thread {
            var decoder = KeyDecoder()
            while !stop.isSet {
                let events = terminal.readEvents(timeout: .seconds(3600), decoder: &decoder)
                if stop.isSet { break }
                if !events.isEmpty { continuation.yield(events) }
                if events.contains(.endOfInput) { break }
            }
            continuation.finish()
        }
        thread.name = "clicker.terminal.input"
        thread.start()
        return stream
    }
}

final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .releasing) }
    var isSet: Bool { flag.load(ordering: .acquiring) }
}
