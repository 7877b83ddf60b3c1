/// The other direction: the central broadcasts, the peripherals listen.
///
/// These two protocols stand apart from `CentralTransport` and `PeripheralTransport`: a radio that
/// cannot broadcast while it scans (or scan while it advertises) simply does not conform. What they
/// promise is again only what BLE can do: a broadcast is non-connectable advertising, sent blind,
/// unacknowledged, and heard by a listener only when the listener happens to be on the right
/// channel, awake, not transmitting itself, and the packet survives the other advertisers.

/// What the central broadcasts: non-connectable advertisements under one company ID.
public struct BroadcastPayload: Sendable, Hashable {
    public var companyID: UInt16
    /// The frames, each the manufacturer data (after the company ID) of one advertising PDU. The radio
    /// sends them in order, starting again after the last, each for its frame time
    /// (``BroadcastCapabilities/frameTime(interval:)``: one advertising event on a controller that
    /// rotates the frames, several through bluetoothd); a payload of one frame is a plain repeated
    /// advertisement.
    public var frames: [[UInt8]]
    /// Requested advertising interval (BLE allows 20 ms to 10.24 s); each event comes this long after
    /// the previous one plus the controller's random 0–10 ms advDelay.
    public var interval: Duration

    public init(companyID: UInt16, frames: [[UInt8]], interval: Duration = .milliseconds(100)) {
        self.companyID = companyID
        self.frames = frames
        self.interval = interval
    }
}

/// What one radio can broadcast, so that the caller sizes its frames before asking.
public struct BroadcastCapabilities: Sendable, Hashable {
    /// Most bytes of manufacturer data (after the company ID) one frame carries: 27 with legacy
    /// non-connectable advertising (31 bytes of AD, no Flags), more with extended advertising.
    public var maxFrameLength: Int
    /// True when the frames go out as extended advertising (AUX_ADV_IND on a secondary channel),
    /// which only BLE 5 listeners scanning for extended advertising hear.
    public var extended: Bool
    /// False when the radio can broadcast only while it does not scan: a Bluetooth 4 controller under
    /// Linux, whose non-connectable advertising needs a new random address, which the controller
    /// refuses while it scans (LE Set Random Address: Command Disallowed). A central that must keep
    /// scanning then does not broadcast unless told to.
    public var whileScanning: Bool
    /// What a frame costs on this radio's air: each frame of a payload holds the air for the payload's
    /// interval plus `frameSlack`, and at least `minimumFrameTime`, before the radio moves to the next
    /// (``frameTime(interval:)``). A controller that sends one frame per advertising event takes the
    /// interval plus its mean advDelay (5 ms, the default); a radio whose host changes the frame says what
    /// its rotation costs (BlueZ: a property change and a refresh per frame). The tally's beacon places
    /// its STATE frames by this time on air (docs/DESIGN.md, "Sending the beacon: this tally", "Frame time").
    public var frameSlack: Duration
    public var minimumFrameTime: Duration

    public init(maxFrameLength: Int, extended: Bool, whileScanning: Bool = true,
                frameSlack: Duration = .milliseconds(5), minimumFrameTime: Duration = .zero) {
        self.maxFrameLength = maxFrameLength
        self.extended = extended
        self.whileScanning = whileScanning
        self.frameSlack = frameSlack
        self.minimumFrameTime = minimumFrameTime
    }

    /// How long each frame of a payload broadcast at `interval` holds the air: `interval + frameSlack`,
    /// at least `minimumFrameTime` (and at least 1 ms).
    public func frameTime(interval: Duration) -> Duration {
        Swift.max(.milliseconds(1), minimumFrameTime, interval + frameSlack)
    }

    /// The same capabilities with frames that cost `slack` over the interval and at least `minimum`.
    public func withFrameTime(slack: Duration, minimum: Duration = .zero) -> BroadcastCapabilities {
        var c = self
        c.frameSlack = slack
        c.minimumFrameTime = minimum
        return c
    }

    /// The most advertising data one LE Extended Advertising Report carries to a scanner's host (an HCI
    /// event's 255 bytes less the subevent's 26). A longer advertisement reaches the host in pieces, and a
    /// voter behind bluetoothd never holds it whole (Linux does not join the pieces; docs/PROTOCOL.md
    /// §11.1), so a beacon frame's advertisement stays within it on every radio.
    public static let singleReportData = 229

    /// Legacy non-connectable advertising: 31 bytes of AD minus the 4-byte Manufacturer Specific Data header.
    public static let legacy = BroadcastCapabilities(maxFrameLength: 27, extended: false)
    /// One extended advertisement, without Flags: 251 bytes of AD (the most one HCI LE Set Extended
    /// Advertising Data command, and Linux, carry) minus the 4-byte MSD header.
    public static let extended = BroadcastCapabilities(maxFrameLength: 247, extended: true)
}

/// The broadcasting side of a central's radio (the tally's beacon). Scanning through
/// `CentralTransport` goes on while it broadcasts.
///
/// Promises, and their limits:
/// - Frames go out in the order given, each for at least one advertising event (its frame time,
///   ``BroadcastCapabilities/frameTime(interval:)``), each on every primary advertising channel the
///   radio uses. Nothing tells the caller that any listener heard any frame.
/// - A single-radio controller does not receive while it transmits: every broadcast PDU costs the
///   scan its airtime on all channels (about 3 × 376 µs per event for full legacy frames), and the
///   broadcast's PDUs collide with the peripherals' on the same channel. Broadcasting is paid for in
///   advertisements not heard; the interval sets the price.
/// - A replacement takes effect at the next advertising event, starting with its first frame; the
///   event in progress finishes with the frame it started.
/// - The interval is a request: a radio that cannot honour it (outside 20 ms...10.24 s, or a stack
///   that picks its own) uses what it can and says so in its status.
public protocol BroadcasterTransport: Sendable {
    /// What this radio can broadcast. Frames longer than `maxFrameLength` are refused.
    func broadcastCapabilities() async throws -> BroadcastCapabilities
    /// Starts broadcasting `payload`, or replaces what is being broadcast. Throws
    /// `TransportError.unsupported` when a frame does not fit or there is no frame.
    func broadcast(_ payload: BroadcastPayload) async throws
    /// Stops broadcasting. Idempotent.
    func stopBroadcasting() async throws
    /// The frames this radio's stack took, each as it reports having taken it: for a radio whose host
    /// changes the frame through a stack that applies changes at its own pace (BlueZ: bluetoothd refreshes
    /// the advertising instance, and says so by writing the TX power back), so the caller learns what
    /// really went on the air and when, rather than counting on the stated frame time. A new call ends
    /// the stream of the call before; the stream ends when the radio shuts down. Radios that send each
    /// frame at its frame time report nothing (the default: a stream that ends at once).
    func framesTaken() -> AsyncStream<FrameTaken>
}

extension BroadcasterTransport {
    public func framesTaken() -> AsyncStream<FrameTaken> { AsyncStream { $0.finish() } }
}

/// A frame the radio's stack took (``BroadcasterTransport/framesTaken()``), and what a frame costs there now.
public struct FrameTaken: Sendable, Hashable {
    public var frame: [UInt8]
    /// The time from asking for this frame to the stack taking it, plus the time the radio then holds each
    /// frame: the frame time this radio achieves now, whatever the frames say (a frame that repeats the one
    /// before changes nothing and is not reported, so the time between reports is no measure of it).
    public var frameTime: Duration

    public init(frame: [UInt8], frameTime: Duration) {
        self.frame = frame
        self.frameTime = frameTime
    }
}

/// How much of its time a listener's receiver is awake: it listens for `window` at the start of every
/// `interval`, on one advertising channel, and moves to the next channel at the next interval.
public struct ScanDutyCycle: Sendable, Hashable {
    public var window: Duration
    public var interval: Duration

    /// `window` is clamped to `interval`. BLE allows intervals of 2.5 ms...10.24 s (HCI LE Set Scan
    /// Parameters); backends clamp to that and say so in their status.
    public init(window: Duration, interval: Duration) {
        self.interval = interval
        self.window = Swift.min(window, interval)
    }

    /// The fraction of time the receiver listens, `window / interval`.
    public var fraction: Double {
        interval > .zero ? window / interval : 0
    }

    /// The Generic Access Profile's fast scan, 30 ms every 60 ms (Core specification, Vol 3, Part C,
    /// Appendix A: TGAP(scan_fast_window), TGAP(scan_fast_interval)); Linux defines the same values,
    /// `DISCOV_LE_SCAN_WIN_FAST` and `DISCOV_LE_SCAN_INT_FAST`, but discovers with ``continuous``.
    public static let fast = ScanDutyCycle(window: .milliseconds(30), interval: .milliseconds(60))
    /// The receiver on all the time, moving channel every 11.25 ms: Linux's discovery scan
    /// (`DISCOV_LE_SCAN_WIN`, `DISCOV_LE_SCAN_INT`), which a BlueZ listener gets whatever it asks.
    public static let continuous = ScanDutyCycle(window: .microseconds(11_250), interval: .microseconds(11_250))
    /// The GAP's first background scan, 11.25 ms every 1.28 s (TGAP(scan_slow_window1),
    /// TGAP(scan_slow_interval1); Linux's `DISCOV_LE_SCAN_*_SLOW1`): under 1 % of the receiver's time.
    public static let slow = ScanDutyCycle(window: .microseconds(11_250), interval: .milliseconds(1280))
    /// Scan interval range the HCI command accepts (0x0004...0x4000 units of 0.625 ms).
    public static let intervalRange: ClosedRange<Duration> = .microseconds(2500) ... .milliseconds(10_240)
}

/// The listening side of a peripheral's radio (the voter hearing the beacon). Advertising through
/// `PeripheralTransport` goes on while it listens.
///
/// Promises, and their limits:
/// - Reports arrive for advertisements under `companyID` that the receiver heard whole: on the one
///   channel it was listening on, inside a scan window, with no other packet destroying it.
///   A listener at duty cycle `d` hears roughly a fraction `d` of a broadcaster's events; nothing
///   is repeated for it, and nothing tells the broadcaster.
/// - A single-radio device does not receive while it transmits its own advertisement.
/// - The stream finishes when the consuming task is cancelled (listening then stops, unless another
///   stream still listens) and throws when the radio fails for good. Several streams on one radio
///   share its receiver, which follows the duty cycle asked for last.
public protocol ListenerTransport: Sendable {
    func listen(companyID: UInt16, dutyCycle: ScanDutyCycle) -> AsyncThrowingStream<AdvertisementReport, any Error>
}
