import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import TerminalView

extension PollController {
    /// What the join code looks like wherever it must not appear (logs, D-Bus `Status`, `--json`).
    public static func redacted(_ code: JoinCode) -> String { "\(IDText.vote(code.voteID))-(secret not shown)" }

    /// What the live view shows, derived from the tally now. `showJoinCode` is for a screen the
    /// instructor projects (the local live view); everything else gets the vote ID only.
    public func viewModel(status: String? = nil, now: Date? = nil, showJoinCode: Bool = false) -> TallyViewModel {
        let now = now ?? clock.date
        let live = liveCounts(now: now)
        // The results by kind, from the counts as published (hidden ones are empty); a ranked
        // question's rounds are the count kept with them, not counted again here.
        var published: [Answer: Int] = [:]
        for (text, n) in live.counts { if let a = Answer(text) { published[a, default: 0] += n } }
        let panel = ResultsPanel(KindResults(spec: spec(of: question), counts: published, ranked: live.rankedCount))
        let rejected = rejections.counts(of: question).filter { $0.value > 0 }.sorted { $0.key < $1.key }
            .map { TallyViewModel.Rejection(reason: $0.key, count: $0.value,
                                            devices: rejections.devices(of: question, reason: $0.key)) }
        let radioNow = RadioInstant.now()
        let radioModel = TallyViewModel.Radio(
            adapter: radio.adapter, scanning: radio.state == .scanning,
            sinceDiscoveryRestart: radio.lastDiscoveryRestart.map { radioNow - $0 },
            errors: radioErrorCount, lastError: radio.lastError,
            beacon: beacon.tally.map { !$0.composer.capabilities.extended ? .legacy : ($0.composer.signs ? .extended : .extendedUnsigned) })
        var alert = beacon.off
        if floodAlert { alert = "flood of forged votes: rejected, honest votes still counted" }
        if let forged = beaconAlert(now: now) { alert = forged }
        if let e = storageError { alert = Self.countingStopped(e) }
        var model = TallyViewModel(
            title: options.title ?? "Clicker",
            joinCode: showJoinCode ? joinCode.description : Self.redacted(joinCode), anonymous: options.roster == nil,
            question: .init(number: Int(question), isOpen: isOpen, elapsed: elapsed(now: now), title: spec.title),
            answers: panel.bars, countsHidden: live.hidden, voters: live.voters, votesPerSecond: votesPerSecond(now: now),
            changes: live.changes,
            rejections: rejected, radio: radioModel, alert: alert,
            status: Self.withVerification(status, verificationStatus))
        if live.notYetShown > 0 { model.notYetShown = live.notYetShown }
        // Devices, each once, when every reason's are known (a resumed poll's stored rejections are packets only).
        model.rejectedDevices = rejections.devices(of: question)
        model.projectorURL = projectorURL
        if !live.hidden {
            model.barsCaption = panel.caption
            model.details = panel.details
        }
        return model
    }

    /// The alert while commits fail: counting has stopped, why, and what happens to the votes.
    static func countingStopped(_ error: String) -> String {
        "COUNTING STOPPED, votes cannot be saved: \(error). Votes not saved are not shown or acknowledged; "
            + "voters keep sending, and counting resumes when the database can be written"
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

/// Plain log lines (stdout not a terminal, or under systemd): events as they happen and a status
/// line every `every` while votes arrive. Woken by the poll's changes, not by a timer.
public enum PlainView {
    /// - Parameter redactSecret: show only the vote ID of the join code (logs that others may read,
    ///   such as the journal); the instructor gets the whole code from `clicker-tally status`.
    public static func run<C: Clock>(_ controller: PollController, every: Duration = .seconds(2), redactSecret: Bool = false,
                                     simulatedRoom: Int? = nil, summary: RejectionSummary = RejectionSummary(),
                                     clock: C, write: @Sendable (String) -> Void) async
    where C.Duration == Duration {
        let formatter = PlainLineFormatter()
        var summary = summary
        let settle = max(every, await controller.options.publishRule.minInterval, summary.interval)
        // Subscribed before the first reading, so no change between the two is missed.
        let updates = controller.changeFeed.updates(every: .milliseconds(200), settle: settle, clock: clock)
        let start = clock.now
        var last: TallyViewModel?
        // The first pass always writes a status line, so changes made before the view started
        // (ballots counted while it was being set up) show without waiting for the next one.
        var lastVersion: Int? = nil
        var lastStatus = clock.now
        func pass() async {
            var model = await controller.viewModel(showJoinCode: !redactSecret)
            model.simulatedRoom = simulatedRoom
            for line in formatter.eventLines(from: last, to: model, rejections: false) { write(line) }
            for line in summary.update(model.rejections, at: start.duration(to: clock.now)) { write(line) }
            let version = await controller.version
            if version != lastVersion, lastVersion == nil || lastStatus.duration(to: clock.now) >= every {
                write(formatter.statusLine(model))
                lastVersion = version
                lastStatus = clock.now
            }
            last = model
        }
        await pass()
        for await _ in updates {
            if Task.isCancelled { break }
            await pass()
        }
    }
}
