import ClickerTransport
import ClickerWire
import Foundation
import TerminalView

extension PollController {
    /// What the join code looks like wherever it must not appear (logs, D-Bus `Status`, `--json`).
    public static func redacted(_ code: JoinCode) -> String { "\(code.voteID)-(secret not shown)" }

    /// What the live view shows, derived from the tally now. `showJoinCode` is for a screen the
    /// instructor projects (the local live view); everything else gets the vote ID only.
    public func viewModel(status: String? = nil, now: Date = Date(), showJoinCode: Bool = false) -> TallyViewModel {
        let r = results(ballots: false)
        let live = liveCounts(now: now)
        let answers = (0..<options.options).map { i -> TallyViewModel.Answer in
            let label = Answer.choice(UInt8(i)).description
            return TallyViewModel.Answer(label: label, count: live.counts[label] ?? 0)
        }
        let rejections = r.rejected.filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { TallyViewModel.Rejection(reason: $0.key, count: $0.value) }
        let radioNow = RadioInstant.now()
        let radioModel = TallyViewModel.Radio(
            adapter: radio.adapter, scanning: radio.state == .scanning,
            sinceDiscoveryRestart: radio.lastDiscoveryRestart.map { radioNow - $0 },
            errors: radioErrorCount, lastError: radio.lastError)
        var alert: String?
        if floodAlert { alert = "flood of forged votes: rejected, honest votes still counted" }
        if let e = storageError { alert = "STORAGE ERROR, votes kept in memory: \(e)" }
        return TallyViewModel(
            title: options.title ?? "Clicker",
            joinCode: showJoinCode ? joinCode.description : Self.redacted(joinCode), anonymous: options.roster == nil,
            question: .init(number: Int(question), isOpen: isOpen, elapsed: elapsed(now: now)),
            answers: answers, countsHidden: live.hidden, voters: live.voters, votesPerSecond: votesPerSecond(now: now),
            changes: live.changes,
            rejections: rejections, radio: radioModel, alert: alert,
            status: Self.withVerification(status, verificationStatus))
    }

    /// The status line, which says so as long as changes of anonymous answers are not verified
    /// (no GATT reads): then anyone with the join code can replace a voter's answer.
    static func withVerification(_ status: String?, _ v: VerificationStatus) -> String? {
        guard v == .changesUnverified else { return status }
        let note = "changes unverified (no GATT reads)"
        return status.map { "\($0) · \(note)" } ?? note
    }

    /// Carries out an operator action from the view; returns a status line for the screen.
    public func perform(_ action: ViewAction, exportDirectory: String) -> String? {
        do {
            switch action {
            case .openQuestion: try openQuestion(); return "question \(question) open"
            case .closeQuestion: try closeQuestion(); return "question \(question) closed"
            case .nextQuestion: try nextQuestion(); return "question \(question) open"
            case .toggleCounts:
                setCountsShown(!countsShown)
                return countsShown ? "counts shown" : "counts hidden while a question is open"
            case .export:
                let files = try export(to: exportDirectory)
                return "exported " + files.joined(separator: ", ")
            case .quit: return nil
            }
        } catch {
            return "\(error)"
        }
    }
}

/// The full-screen live view on a terminal: keys drive the poll, frames are redrawn only on change,
/// at most ten a second, writing only the changed cells.
///
/// `run` is the whole loop; `step` is one pass of it, so a benchmark or a test can drive the loop
/// itself, pass by pass, and measure or check what each pass does.
public struct LiveView {
    /// How long `run` waits between passes.
    public static let passInterval: Duration = .milliseconds(50)

    private var screen: LiveScreen
    private var state = ViewState()
    private var decoder = KeyDecoder()
    private var status: String?
    private var model: TallyViewModel?
    private let start = ContinuousClock.now

    /// A view that honours NO_COLOR (and TERM=dumb) from `environment`.
    public init(environment: [String: String]) {
        screen = LiveScreen(encoder: ANSIEncoder(color: ANSIEncoder.colorAllowed(environment: environment)))
    }

    /// What one pass did.
    public enum Pass: Sendable, Equatable {
        /// Nothing to show yet (no answer from the poll so far).
        case waiting
        /// A frame of this many bytes was written (0: throttled or unchanged).
        case shown(bytes: Int)
        /// The operator quit.
        case quit
    }

    /// One pass: handles pending keys and resizes, reads the poll, writes the changed cells.
    public mutating func step(_ poll: any PollControl, terminal: TerminalSession, exportDirectory: String) async -> Pass {
        for event in terminal.readEvents(timeout: .zero, decoder: &decoder) {
            switch event {
            case .key(let key):
                let open = model?.question?.isOpen ?? false
                if let action = state.handle(key, questionOpen: open) {
                    if action == .quit { return .quit }
                    status = await poll.perform(action, exportDirectory: exportDirectory)
                }
            case .resize:
                screen.invalidate()
            case .endOfInput:
                break
            }
        }
        do {
            model = try await poll.viewModel(status: status)
        } catch {
            // The daemon went away (watch): keep the last picture and say so.
            model?.alert = "lost the daemon: \(error)"
        }
        guard let shown = model else { return .waiting }
        let size = terminal.size() ?? TerminalSize(width: 80, height: 24)
        switch screen.tick(model: shown, state: state, width: size.width, height: size.height,
                           now: ContinuousClock.now - start) {
        case .draw(let bytes):
            if !bytes.isEmpty { terminal.write(bytes) }
            return .shown(bytes: bytes.count)
        case .throttled, .unchanged:
            return .shown(bytes: 0)
        }
    }

    /// Runs until the operator quits (returns) or the task is cancelled.
    public static func run(_ poll: any PollControl, terminal: TerminalSession, exportDirectory: String,
                           environment: [String: String]) async {
        var view = LiveView(environment: environment)
        while !Task.isCancelled {
            switch await view.step(poll, terminal: terminal, exportDirectory: exportDirectory) {
            case .quit: return
            case .waiting: try? await Task.sleep(for: .milliseconds(200))
            case .shown: try? await Task.sleep(for: passInterval)
            }
        }
    }
}

/// Plain log lines (stdout not a terminal, or under systemd): events as they happen and a status
/// line every `every` while votes arrive.
public enum PlainView {
    /// - Parameter redactSecret: show only the vote ID of the join code (logs that others may read,
    ///   such as the journal); the instructor gets the whole code from `clicker-tally status`.
    public static func run(_ controller: PollController, every: Duration = .seconds(2), redactSecret: Bool = false,
                           write: @Sendable (String) -> Void) async {
        let formatter = PlainLineFormatter()
        var last: TallyViewModel?
        var lastVersion = -1
        var lastStatus = ContinuousClock.now
        while !Task.isCancelled {
            let model = await controller.viewModel(showJoinCode: !redactSecret)
            for line in formatter.eventLines(from: last, to: model) { write(line) }
            let version = await controller.version
            if version != lastVersion, ContinuousClock.now - lastStatus >= every {
                write(formatter.statusLine(model))
                lastVersion = version
                lastStatus = ContinuousClock.now
            }
            last = model
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
}
