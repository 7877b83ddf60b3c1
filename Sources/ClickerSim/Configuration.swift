import ClickerTransport

/// How the simulated air keeps time.
public enum AirClock: Sendable, Hashable {
    /// Virtual time starting at zero, advanced only by `SimulatedAir.run(until:)` and friends.
    /// A run is a pure function of the seed and the script: fast and reproducible.
    case virtual
    /// Wall time: events are paced to the monotonic clock (`speed` 1 = real time, 10 = ten times faster).
    /// Report timestamps are on `RadioInstant.now()`'s scale when `speed` is 1.
    case realTime(speed: Double = 1)
}

/// One scanner (one controller's receiver). BLE scanners listen on one advertising channel at a time.
public struct ScannerConfiguration: Sendable, Hashable {
    /// Scan interval: the scanner moves to the next channel at the start of every interval.
    public var interval: Duration
    /// Scan window: how long it listens at the start of each interval (`window == interval` is 100 % duty).
    public var window: Duration
    /// The channels it cycles through, in order (37, 38, 39 as controllers do).
    public var channels: [UInt8]
    /// Index into `channels` of the first channel (give several scanners different ones).
    public var firstChannelIndex: Int

    public init(interval: Duration = .milliseconds(100), window: Duration? = nil,
                channels: [UInt8] = [37, 38, 39], firstChannelIndex: Int = 0) {
        self.interval = interval
        self.window = window ?? interval
        self.channels = channels
        self.firstChannelIndex = firstChannelIndex
    }
}

/// GATT connections made by the central for `readCharacteristic`.
public struct ConnectionConfiguration: Sendable, Hashable {
    /// Most connections (being set up or open) at once; further reads queue. Controllers allow few.
    public var maxConcurrent: Int
    /// Connection interval once connected (BLE allows 7.5 ms...4 s; clamped to that).
    public var connectionInterval: Duration
    /// Connection events needed for the read (MTU exchange, discovery by UUID, read, disconnect).
    public var exchangeEvents: Int
    /// Whether a peripheral stops advertising while a central is connected to it (legacy advertising does).
    public var pauseAdvertisingWhileConnected: Bool

    public init(maxConcurrent: Int = 4, connectionInterval: Duration = .milliseconds(30),
                exchangeEvents: Int = 4, pauseAdvertisingWhileConnected: Bool = true) {
        self.maxConcurrent = maxConcurrent
        self.connectionInterval = connectionInterval
        self.exchangeEvents = exchangeEvents
        self.pauseAdvertisingWhileConnected = pauseAdvertisingWhileConnected
    }

    /// Time from CONNECT_IND to the value being back at the host: transmit window offset (1.25 ms)
    /// plus `exchangeEvents` connection intervals.
    public var exchangeDuration: Duration {
        let interval = Swift.min(Swift.max(connectionInterval, .microseconds(7500)), .seconds(4))
        return .microseconds(1250) + interval * Swift.min(Swift.max(exchangeEvents, 0), 10_000)
    }
}

/// When a peripheral's first advertising event comes after it starts advertising.
///
/// The default, `.randomWithinInterval`, models a room where people press their buttons at unrelated
/// moments. `.immediate` with many devices started at the same instant models a synchronized start
/// (every board triggered by one broadcast): their events then stay bunched for many intervals,
/// because only the 0–10 ms advDelay spreads them, and far fewer get through.
public enum FirstEventPhase: Sendable, Hashable {
    /// Right away, plus the usual 0–10 ms advDelay (what a controller does).
    case immediate
    /// Uniformly within one interval: models people pressing their buttons at unrelated moments.
    case randomWithinInterval
}

/// Which part of the central's time its own broadcast takes from its scanner.
public enum BroadcastDeafness: Sendable, Hashable {
    /// Deaf for each broadcast PDU's airtime, on every channel (the receiver is free in the gaps
    /// between the PDUs of one event).
    case packets
    /// Deaf from the first PDU of a broadcast event to the end of its last (controllers that schedule
    /// the whole advertising event as one radio activity, suspending the scan for all of it).
    case wholeEvent
}

/// The central's broadcast (the tally's beacon) and the peripherals' listening for it.
///
/// The defaults follow legacy advertising on a single-radio controller: the broadcast's PDUs go out on
/// channels 37, 38 and 39 in turn, `AirConfiguration.interChannelGap` apart, with the 0–10 ms advDelay
/// of any advertiser (Core specification, Vol 6, Part B, 4.4.2.2); each lasts the airtime of its
/// non-connectable PDU (`LegacyAdvertising.airTime`, 376 µs for 27 bytes of data); while one is in the
/// air the central's first controller hears nothing on any channel. A listening peripheral cycles
/// through 37, 38, 39, one channel per scan interval, as controllers scan.
public struct BroadcastConfiguration: Sendable, Hashable {
    /// The central's address, as listeners report it.
    public var centralAddress: DeviceAddress
    /// The channels each broadcast event uses, in order.
    public var channels: [UInt8]
    /// Index into `AirConfiguration.scanners` of the scanner on the broadcasting controller, which is
    /// deaf while it transmits; nil models a second controller broadcasting (no deafness, collisions only).
    public var broadcastingScanner: Int?
    public var deafness: BroadcastDeafness
    /// The channels a listening peripheral cycles through, one per scan interval, starting with the first.
    public var listenChannels: [UInt8]
    /// When set, every listener's receiver follows this duty cycle whatever it asked for: a knob to
    /// compare voters' scan settings without changing the voters. Nil (the default): as asked, the
    /// voter's request being `ScanDutyCycle.continuous` (`BeaconFollower.listening`).
    public var listenDutyCycle: ScanDutyCycle?
    /// True when the central's controller does extended advertising (BLE 5; `ExtendedAdvertising`):
    /// frames of up to 247 bytes, each event an ADV_EXT_IND on every channel of `channels` and one
    /// AUX_ADV_IND on a secondary channel that no peripheral's PDU touches. A listener hears the frame
    /// when it hears one ADV_EXT_IND clean (as a legacy PDU) and is not transmitting during the
    /// AUX_ADV_IND. The central is deaf during all of them. False (the default): legacy, 27 bytes.
    public var extended: Bool
    /// Most frames a listener's stream holds for a reader that lags; past it the oldest are dropped, as
    /// a busy host's receiver misses frames (which repeat on the air). Nil (the default): without
    /// bound, so that virtual-clock tests and benchmarks get every frame the air delivered.
    public var listenBuffer: Int?
    /// When set, the central keeps each frame on the air for at least this long, repeating it at every
    /// event meanwhile, and moves to the next at the first event after: the beacon of a host that changes
    /// the frame itself, as bluetoothd's does (one property change per frame, 100–150 ms apart). A
    /// replaced payload still starts at its first frame, at the next event. Nil (the default): one frame
    /// per event, as a controller that rotates them.
    public var frameDwell: Duration?

    public init(centralAddress: DeviceAddress = DeviceAddress(rawValue: 0xC0_00_00_00_00_00),
                channels: [UInt8] = [37, 38, 39], broadcastingScanner: Int? = 0,
                deafness: BroadcastDeafness = .packets, listenChannels: [UInt8] = [37, 38, 39],
                listenDutyCycle: ScanDutyCycle? = nil, extended: Bool = false, listenBuffer: Int? = nil,
                frameDwell: Duration? = nil) {
        self.frameDwell = frameDwell
        self.extended = extended
        self.listenBuffer = listenBuffer
        self.centralAddress = centralAddress
        self.channels = channels
        self.broadcastingScanner = broadcastingScanner
        self.deafness = deafness
        self.listenChannels = listenChannels
        self.listenDutyCycle = listenDutyCycle
    }
}

/// Everything that shapes the simulated air. The defaults are a quiet lecture hall with one laptop.
public struct AirConfiguration: Sendable, Hashable {
    /// Seed of the simulator's generator: same seed, same script → same run (virtual clock).
    public var seed: UInt64
    public var clock: AirClock
    /// The central's scanners (one per controller). Several scanners on different channels hear more.
    public var scanners: [ScannerConfiguration]
    /// Gap between the end of one PDU and the start of the next within an advertising event.
    public var interChannelGap: Duration
    /// Upper bound of the random advDelay added to each advertising interval (0–10 ms in the specification).
    public var maxAdvertisingDelay: Duration
    /// Capture effect: a PDU survives a collision when it is at least this many dB stronger than
    /// the sum of the PDUs it overlaps. `nil` = every overlap destroys both.
    public var captureThreshold: Double?
    /// Probability that a clean PDU is still lost (fading, interference from Wi-Fi...).
    public var lossProbability: Double
    /// Receiver sensitivity in dBm: weaker advertisers are out of range.
    public var sensitivity: Double
    /// RSSI given to peripherals added without one: uniform in this range (dBm).
    public var defaultRSSIRange: ClosedRange<Double>
    /// Uniform noise (± dB) on the RSSI the scanner reports.
    public var rssiNoise: Double
    public var connections: ConnectionConfiguration
    public var firstEventPhase: FirstEventPhase
    /// The central's broadcast and the peripherals' listening.
    public var broadcast: BroadcastConfiguration
    /// A lecture hall: seats, receivers (one central each, `SimulatedAir.centrals()`) and a path loss per
    /// link (PathLoss.swift), instead of one RSSI per device. Nil (the default): one central, and
    /// every device heard at its own `rssi` (`defaultRSSIRange`) by the central and every listener.
    public var hall: LectureHall?

    public init(seed: UInt64 = 1, clock: AirClock = .virtual,
                scanners: [ScannerConfiguration] = [ScannerConfiguration()],
                interChannelGap: Duration = .microseconds(500),
                maxAdvertisingDelay: Duration = .milliseconds(10),
                captureThreshold: Double? = nil, lossProbability: Double = 0,
                sensitivity: Double = -95, defaultRSSIRange: ClosedRange<Double> = -85 ... -45,
                rssiNoise: Double = 2, connections: ConnectionConfiguration = ConnectionConfiguration(),
                firstEventPhase: FirstEventPhase = .randomWithinInterval,
                broadcast: BroadcastConfiguration = BroadcastConfiguration(), hall: LectureHall? = nil) {
        self.hall = hall
        self.seed = seed
        self.clock = clock
        self.scanners = scanners
        self.interChannelGap = interChannelGap
        self.maxAdvertisingDelay = maxAdvertisingDelay
        self.captureThreshold = captureThreshold
        self.lossProbability = lossProbability
        self.sensitivity = sensitivity
        self.defaultRSSIRange = defaultRSSIRange
        self.rssiNoise = rssiNoise
        self.connections = connections
        self.firstEventPhase = firstEventPhase
        self.broadcast = broadcast
    }
}

/// Counters of what happened in the air, for tests and benchmarks.
public struct AirStatistics: Sendable, Hashable {
    /// Advertising events started.
    public var advertisingEvents = 0
    /// Advertising PDUs transmitted (three per event).
    public var pdusTransmitted = 0
    /// PDUs that lay wholly inside a scan window on the scanner's channel while scanning (per scanner).
    public var pdusListened = 0
    /// Listened PDUs received and reported.
    public var pdusReceived = 0
    /// Listened PDUs destroyed by an overlapping PDU.
    public var collisions = 0
    /// Listened PDUs that overlapped another but survived by capture.
    public var captures = 0
    /// Listened PDUs dropped by the random loss.
    public var randomLosses = 0
    /// Listened PDUs below the receiver's sensitivity.
    public var outOfRange = 0
    /// Reports handed to central streams.
    public var reportsDelivered = 0
    public var connectionsEstablished = 0
    public var readsSucceeded = 0
    public var readsFailed = 0
    /// Most connections (being set up or open) of one central at any one time.
    public var peakConnections = 0

    // The central's broadcast and the peripherals' listening.
    /// Broadcast events started, and broadcast PDUs sent (one per channel per event).
    public var broadcastEvents = 0
    public var broadcastPDUs = 0
    /// Listened PDUs (counted in `pdusListened`) the central missed because it was transmitting.
    public var missedWhileBroadcasting = 0
    /// Broadcast PDUs that lay wholly inside a listener's scan window on its channel (per listening device).
    public var broadcastPDUsListened = 0
    /// Of those: heard, missed because the device was transmitting, destroyed by an overlap, survived
    /// an overlap by capture, below sensitivity, dropped by the random loss.
    public var broadcastPDUsHeard = 0
    public var broadcastMissedWhileTransmitting = 0
    public var broadcastCollisions = 0
    public var broadcastCaptures = 0
    public var broadcastOutOfRange = 0
    public var broadcastRandomLosses = 0
    /// Extended broadcast: ADV_EXT_IND PDUs heard clean (counted in `broadcastPDUsListened`, not in
    /// `broadcastPDUsHeard`), and of their AUX_ADV_IND: missed because the listener was transmitting,
    /// dropped by the random loss. The frames heard are counted in `broadcastPDUsHeard`.
    public var broadcastIndicationsHeard = 0
    public var broadcastAuxiliaryMissedWhileTransmitting = 0
    public var broadcastAuxiliaryRandomLosses = 0
    /// Reports handed to listener streams.
    public var listenerReportsDelivered = 0
    /// An attacker's radio (`SimulatedAir.addAttacker`): its PDUs a listener heard (each one reaches every
    /// listening device, and the attacker hears every device's), and those an overlap destroyed there.
    public var attackerPDUsHeard = 0
    public var attackerCollisions = 0

    public init() {}
}
