import ClickerWire

/// Keeps the STATE interval a tally announces from swinging (docs/DESIGN.md, "The STATE interval this
/// tally announces", "Damping the interval"). Every change
/// restarts the advertising of every voter not yet acknowledged (a new interval, a new random start),
/// and the estimate the interval comes from is noisy: read from the repeats it may say 70 ms, then,
/// its evidence faded, the room's 720 ms, then 350 ms, within a few seconds. Pure.
///
/// The rule. A new choice replaces the announced interval only when it differs from it by more than
/// ``Tuning/margin`` (a fifth), and, when it goes the other way than the last change (longer after
/// shorter, or shorter after longer), no sooner than ``Tuning/reversalHold`` after it, and in the same
/// direction no sooner than ``Tuning/hold`` (300 ms). So the interval follows a room down as it is
/// counted, or up as it grows, a step per 300 ms at most, and turns back only when the evidence still
/// says so two seconds later.
/// A question's first change waits for nothing and sets no direction: it moves the interval to the room
/// the question assumes, from wherever the last question left it.
public struct IntervalDamping: Sendable {
    public struct Tuning: Sendable, Hashable {
        /// The share of the announced interval by which a new choice must differ to replace it.
        public var margin = 0.2
        /// The least time between two changes in the same direction.
        public var hold: Duration = .milliseconds(300)
        /// The least time between a change and one in the other direction.
        public var reversalHold: Duration = .seconds(2)
        public init() {}
    }

    public var tuning: Tuning
    /// When the last change was announced (the radio's clock, ns), and whether it lengthened the interval
    /// (nil: a question's first, which sets the interval for the room it assumes and no direction).
    var lastChange: (at: UInt64, longer: Bool?)?
    /// Changes announced since ``reset()`` (each restarts every voter still advertising at the interval).
    public private(set) var changes = 0

    public init(tuning: Tuning = Tuning()) { self.tuning = tuning }

    /// A new question: its first choice goes out at once.
    public mutating func reset() {
        lastChange = nil
        changes = 0
    }

    /// The interval to announce at `ns` when `current` is announced and `best` is chosen now.
    public mutating func next(current: BeaconInterval, best: BeaconInterval, at ns: UInt64) -> BeaconInterval {
        let first = changes == 0
        guard let now = current.milliseconds, let new = best.milliseconds else {
            if best != current { note(longer: nil, at: ns) }
            return best
        }
        guard new != now, Double(abs(new - now)) > tuning.margin * Double(now) else { return current }
        let longer = new > now
        if let last = lastChange {
            let since = ns >= last.at ? ns - last.at : 0
            let wait = last.longer.map { $0 == longer ? tuning.hold : tuning.reversalHold } ?? .zero
            guard since >= TallyBeacon.ns(wait) else { return current }
        }
        note(longer: first ? nil : longer, at: ns)
        return best
    }

    mutating func note(longer: Bool?, at ns: UInt64) {
        lastChange = (ns, longer)
        changes += 1
    }
}
