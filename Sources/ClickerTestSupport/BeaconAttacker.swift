import ClickerTransport
import ClickerWire

/// How a forger seals the beacon frames it makes. A classmate holds the join code, hence the poll's
/// beacon key: legacy frames (and every frame of protocol version 3) are sealed with it, as the tally
/// seals them. A poll-key signature (version 4's extended frames) is another case of this enum.
public enum ForgerSealing: Sendable {
    case joinCodeKey(BeaconKey)
}

/// A classmate's forger: reads the tally's STATE frames it heard (it can open them) and seals its own.
public struct BeaconForger: Sendable {
    public let sealing: ForgerSealing

    public init(_ sealing: ForgerSealing) { self.sealing = sealing }

    /// A classmate's forger: it derived the beacon key from the join code on the projector.
    public init(secret: PollSecret) { self.init(.joinCodeKey(BeaconKey(secret))) }

    /// `state` sealed as the tally would.
    public func seal(_ state: BeaconState) throws -> [UInt8] {
        switch sealing {
        case .joinCodeKey(let key): try BeaconCodec.seal(state, key: key)
        }
    }

    /// The STATE frame with the highest counter among `frames` that opens as this poll's.
    public func newestState(in frames: some Sequence<[UInt8]>) -> BeaconState? {
        var newest: BeaconState?
        for f in frames {
            guard case .joinCodeKey(let key) = sealing, case .success(.state(let s)) = BeaconCodec.open(f, key: key) else { continue }
            if newest.map({ s.counter > $0.counter }) ?? true { newest = s }
        }
        return newest
    }
}

/// The tally's STATE frames as an outsider records them off the air (no key needed: the frame kind is in
/// clear, docs/PROTOCOL.md §11.2) and replays them: each recorded frame from the offset at which it was
/// first heard until the next one, looping over the recording's length.
public struct FrameReplay: Sendable {
    /// Distinct STATE frames in the order first heard, with that moment's offset from the first.
    public let frames: [(offset: Duration, data: [UInt8])]
    /// From the first frame heard to the last report recorded.
    public let length: Duration

    /// The STATE frames among `reports` (every frame the attacker's radio heard, in order).
    public init(recording reports: [AdvertisementReport]) {
        var seen: Set<[UInt8]> = [], frames: [(Duration, [UInt8])] = []
        let states = reports.filter { Self.isState($0.data) }
        let first = states.first?.timestamp.nanoseconds ?? 0
        for r in states where seen.insert(r.data).inserted {
            frames.append((.nanoseconds(Int64(r.timestamp.nanoseconds - first)), r.data))
        }
        self.frames = frames
        let last = reports.last?.timestamp.nanoseconds ?? first
        length = .nanoseconds(Int64(max(last, first) - first)) + .milliseconds(1)
    }

    /// Whether a frame is a beacon STATE frame, by its clear header (any version).
    public static func isState(_ data: [UInt8]) -> Bool {
        data.count >= 2 && BeaconFrameKind(rawValue: data[1] & 0x0F) == .state
    }

    /// The frame to send `elapsed` into the replay.
    public func frame(at elapsed: Duration) -> [UInt8]? {
        guard !frames.isEmpty else { return nil }
        let nanos = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        let lengthNanos = length.components.seconds * 1_000_000_000 + length.components.attoseconds / 1_000_000_000
        let at = Duration.nanoseconds(nanos % max(1, lengthNanos))
        return frames.last(where: { $0.offset <= at })?.data ?? frames[0].data
    }
}
