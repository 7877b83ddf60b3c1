/// A voter's defence against replayed beacon frames (docs/PROTOCOL.md §11.5): per frame kind, the
/// highest counter it has accepted; a frame whose counter is not above it is ignored.
///
/// The tally takes a new counter value for every frame it seals, from one counter per poll that
/// never goes back, and sends the frames of one kind one after another, so each kind's counters
/// rise in the order they are heard. Keeping one highest counter per kind (not one for all) lets
/// frames of different kinds travel in different advertising sets at once. A frame heard again
/// (the same advertisement repeated) is not newer either: act on each frame once. Pure value; keep
/// one per poll (join code), and apply it to authentic frames only (after ``BeaconCodec/open(_:key:)``).
public struct BeaconReplayGuard: Sendable, Hashable {
    var newest: [UInt32?] = [nil, nil, nil]

    public init() {}

    static func slot(_ kind: BeaconFrameKind) -> Int {
        switch kind {
        case .state: 0
        case .acks: 1
        case .text: 2
        }
    }

    /// The highest counter accepted for `kind`; nil before the first.
    public func newest(_ kind: BeaconFrameKind) -> UInt32? { newest[Self.slot(kind)] }

    /// Whether `frame` is newer than every frame of its kind accepted so far; if so it becomes the
    /// newest. False for an older or repeated frame, which the voter ignores.
    public mutating func admit(_ frame: BeaconFrame) -> Bool {
        let i = Self.slot(frame.kind)
        if let n = newest[i], frame.counter <= n { return false }
        newest[i] = frame.counter
        return true
    }
}
