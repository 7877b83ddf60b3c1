import ClickerWire
import Synchronization

/// What a voter lets in from the beacon (docs/PROTOCOL.md §11.7 and §11.10, version 4): opens each
/// frame, learns and checks the poll's public key, verifies signatures, and applies the replay guard
/// to STATE. Pure value, no I/O; one per poll.
///
/// - Before the poll's key is known, tagged frames are taken (the replay guard's tagged rules), and a
///   signed STATE offers its hidden key: the key is accepted only when it verifies that frame's
///   signature and gives the join code's secret (``BeaconAnchor``: one scrypt).
/// - Once the key is known, only frames it signed are taken: no tagged frame, for the rest of the
///   poll (no downgrade).
/// - A key whose anchor does not match is remembered and never checked again, and at most one key is
///   checked per ``anchorCheckEvery`` (a flood of made-up keys costs one scrypt a second, and the
///   key heard most often goes first: the tally's, which every one of its STATE frames carries).
/// - The same signed advertisement is heard again and again: a frame verified lately is not verified
///   again (the last ``verifiedCacheSize``). Nor is a tagged frame's tag checked again while tagged frames
///   are taken (the last ``openedCacheSize``): the same bytes carry the same tag, so a repeat is admitted
///   exactly as the first was, by the same rules (a tagged frame is refused once the key is known).
///   A follower hears the tally's few frames over and over while nothing changes (each about ten times a
///   second); opening each again was most of its own work.
public struct BeaconAdmission: Sendable {
    public static let anchorCheckEvery: Duration = .seconds(1)
    public static let verifiedCacheSize = 64
    public static let openedCacheSize = 16
    /// Keys waiting for their anchor check, the least recently offered dropped first: the tally's key,
    /// offered by each of its STATE frames (several a second), stays unless a forger offers more than
    /// this many new keys between two of them.
    static let candidateLimit = 256
    static let refusedKeyLimit = 1024

    /// What became of a frame.
    public enum Outcome: Sendable, Hashable {
        /// Taken: act on it.
        case taken(BeaconFrame)
        /// Authentic and from the tally as far as the voter can tell, but nothing new (a signed frame
        /// before the key is known).
        case heard
        /// An authentic STATE frame the replay guard holds back (not newer, or too far ahead).
        case heldBack(BeaconState)
        /// Not from the poll: not ours, another poll's, a bad tag, or (signed) a bad signature, a key
        /// the join code does not commit to, a tagged frame after the key is known.
        case refused
    }

    public let key: BeaconKey
    /// The poll's public key, once a signed STATE revealed it and it matched the join code.
    public private(set) var publicKey: BeaconPublicKey?
    public private(set) var replayGuard = BeaconReplayGuard()
    /// Frames refused that had a valid tag (a holder of the join code made them, or an unsigned frame
    /// came after the key was known): forgeries.
    public private(set) var forgeriesRefused = 0
    /// Anchor checks (scrypt) run.
    public private(set) var anchorChecks = 0
    /// Signature verifications run (cache misses).
    public private(set) var verifications = 0
    /// Frames opened (tag checked and decoded, ``BeaconCodec/envelope(_:key:)``): every frame heard that
    /// neither cache holds.
    public private(set) var framesOpened = 0

    var verified: [[UInt8]: BeaconFrame] = [:]
    var verifiedOrder: [[UInt8]] = []
    /// Tagged frames whose tag checked, while the poll's key is unknown.
    var opened: [[UInt8]: BeaconFrame] = [:]
    var openedOrder: [[UInt8]] = []
    var refusedKeys: Set<[UInt8]> = []
    /// Per key waiting: the frames that offered it, and the serial number of the last one.
    var candidates: [[UInt8]: (count: Int, last: Int)] = [:]
    var offers = 0
    var nextAnchorCheck: Duration?

    let anchors: BeaconAnchorVerdicts?

    /// `publicKey`: the poll's key when the voter already checked it against the join code;
    /// `anchors`: verdicts shared by the voters of one process (a simulated room checks each key once).
    public init(key: BeaconKey, publicKey: BeaconPublicKey? = nil, anchors: BeaconAnchorVerdicts? = nil) {
        self.key = key
        self.publicKey = publicKey
        self.anchors = anchors
    }

    /// Opens and admits `bytes` heard at `now` (the voter's monotonic clock).
    public mutating func admit(_ bytes: [UInt8], at now: Duration) -> Outcome {
        if let frame = verified[bytes] { return take(frame, signed: true, at: now) }
        if publicKey == nil, let frame = opened[bytes] { return take(frame, signed: false, at: now) }
        framesOpened += 1
        guard case .success(let e) = BeaconCodec.envelope(bytes, key: key) else { return .refused }
        guard e.isSigned else {
            // A tagged frame: taken only while the poll's key is unknown.
            guard publicKey == nil else { forgeriesRefused += 1; return .refused }
            rememberOpened(bytes, e.frame)
            return take(e.frame, signed: false, at: now)
        }
        if let pk = publicKey {
            verifications += 1
            guard e.verify(pk) else { forgeriesRefused += 1; return .refused }
            remember(bytes, e.frame)
            return take(e.frame, signed: true, at: now)
        }
        // No key yet: only a signed STATE can offer one.
        guard case .state(let s) = e.frame, let hidden = s.hiddenKey, let pk = key.revealKey(hidden) else { return .heard }
        guard !refusedKeys.contains(pk.bytes) else { forgeriesRefused += 1; return .refused }
        verifications += 1
        guard e.verify(pk) else { forgeriesRefused += 1; return .refused }
        offers += 1
        candidates[pk.bytes] = ((candidates[pk.bytes]?.count ?? 0) + 1, offers)
        if candidates.count > Self.candidateLimit, let stale = candidates.min(by: { $0.value.last < $1.value.last })?.key {
            candidates[stale] = nil
        }
        if let at = nextAnchorCheck, now < at { return .heard }
        nextAnchorCheck = now + Self.anchorCheckEvery
        // The key offered by the most frames goes first (among equals, the latest: this frame's).
        let best = candidates.max { a, b in
            a.value.count != b.value.count ? a.value.count < b.value.count : a.value.last < b.value.last
        }?.key ?? pk.bytes
        candidates[best] = nil
        guard let code = key.joinCode, let candidate = BeaconPublicKey(bytes: best) else { return .heard }
        anchorChecks += 1
        let matches = anchors.map { $0.matches(candidate, code) } ?? BeaconAnchor.matches(candidate, code)
        guard matches else {
            insertRefused(best)
            if best == pk.bytes { forgeriesRefused += 1; return .refused }
            return .heard
        }
        publicKey = candidate
        candidates = [:]
        opened = [:]
        openedOrder = []
        guard best == pk.bytes else { return .heard }
        remember(bytes, e.frame)
        return take(e.frame, signed: true, at: now)
    }

    private mutating func take(_ frame: BeaconFrame, signed: Bool, at now: Duration) -> Outcome {
        guard case .state(let s) = frame else { return .taken(frame) }
        let newer = signed ? replayGuard.admitSigned(s, at: now) : replayGuard.admit(s, at: now)
        return newer ? .taken(frame) : .heldBack(s)
    }

    /// Forgets the STATE frames taken and starts the replay guard again from `s`, heard at `now`: a
    /// follower whose taken frames were contradicted (``BeaconFollower``, "listening again") takes the
    /// newest it heard. Only for tagged frames; signed ones need no such step.
    public mutating func restartReplayGuard(from s: BeaconState, at now: Duration) {
        replayGuard = BeaconReplayGuard()
        _ = replayGuard.admit(s, at: now)
    }

    private mutating func remember(_ bytes: [UInt8], _ frame: BeaconFrame) {
        guard verified[bytes] == nil else { return }
        verified[bytes] = frame
        verifiedOrder.append(bytes)
        if verifiedOrder.count > Self.verifiedCacheSize { verified[verifiedOrder.removeFirst()] = nil }
    }

    private mutating func rememberOpened(_ bytes: [UInt8], _ frame: BeaconFrame) {
        guard opened[bytes] == nil else { return }
        opened[bytes] = frame
        openedOrder.append(bytes)
        if openedOrder.count > Self.openedCacheSize { opened[openedOrder.removeFirst()] = nil }
    }

    private mutating func insertRefused(_ pk: [UInt8]) {
        if refusedKeys.count >= Self.refusedKeyLimit { refusedKeys.removeAll(keepingCapacity: true) }
        refusedKeys.insert(pk)
    }
}

/// Anchor checks shared by the voters of one process (``Classroom``'s simulated students): each key is
/// checked once (one scrypt), under a lock, and its verdict kept (at most ``limit`` keys).
public final class BeaconAnchorVerdicts: Sendable {
    static let limit = 1024
    private let verdicts = Mutex<[[UInt8]: Bool]>([:])

    public init() {}

    /// Whether `pk` is the key `code` commits to; the first caller for a key runs scrypt while the others wait.
    public func matches(_ pk: BeaconPublicKey, _ code: JoinCode) -> Bool {
        verdicts.withLock { v in
            if let known = v[pk.bytes] { return known }
            let m = BeaconAnchor.matches(pk, code)
            if v.count >= Self.limit { v.removeAll() }
            v[pk.bytes] = m
            return m
        }
    }
}
