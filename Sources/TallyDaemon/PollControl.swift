import TerminalView

/// What a live view needs from a poll: the local `PollController`, or a daemon over D-Bus
/// (`RemotePoll`, used by `clicker-tally watch`).
public protocol PollControl: Sendable {
    /// What to show now.
    func viewModel(status: String?) async throws -> TallyViewModel
    /// Carries out an operator action; returns a line for the status bar.
    func perform(_ action: ViewAction, exportDirectory: String) async -> String?
    /// Yields when what `viewModel` shows may have changed (coalesced; the view then reads it).
    func changes() -> AsyncStream<Void>
}

extension PollControl {
    /// No change notices: the view redraws on keys and on its one-second clock only.
    public func changes() -> AsyncStream<Void> { AsyncStream { _ in } }
}

extension PollController: PollControl {
    public func viewModel(status: String?) async throws -> TallyViewModel {
        // The local live view is the instructor's own screen: it shows the join code.
        viewModel(status: status, showJoinCode: true)
    }

    public nonisolated func changes() -> AsyncStream<Void> { changeFeed.subscribe() }
}
