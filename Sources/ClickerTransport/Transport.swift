/// The seam between vote logic and radio.
///
/// A backend (simulated air, BlueZ over D-Bus, raw HCI) adapts one radio to these two
/// protocols, and, when it can talk the other way too, to `BroadcasterTransport` and
/// `ListenerTransport` (BroadcastAndListen.swift). Vote logic never sees anything else of the
/// radio. The protocols promise only what BLE can do: advertisements are broadcast,
/// unacknowledged and may be lost; a GATT read needs a connection and may fail or time out.

/// A 48-bit Bluetooth device address, most significant byte first (as printed: `00:AA:01:00:00:01`).
public struct DeviceAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The six address bytes, most significant first.
    public let bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8)

    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8, _ b4: UInt8, _ b5: UInt8) {
        bytes = (b0, b1, b2, b3, b4, b5)
    }

    /// The address as one integer (low 48 bits), handy as a dictionary key or a simulator index.
    public init(rawValue: UInt64) {
        self.init(UInt8(truncatingIfNeeded: rawValue >> 40), UInt8(truncatingIfNeeded: rawValue >> 32),
                  UInt8(truncatingIfNeeded: rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
                  UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue))
    }

    /// Parses `AA:BB:CC:DD:EE:FF` (or with `_` separators, as in BlueZ object paths). Returns nil otherwise.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(whereSeparator: { $0 == ":" || $0 == "_" })
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for part in parts {
            guard part.count == 2, let v = UInt8(part, radix: 16) else { return nil }
            out.append(v)
        }
        self.init(out[0], out[1], out[2], out[3], out[4], out[5])
    }

    public var rawValue: UInt64 {
        UInt64(bytes.0) << 40 | UInt64(bytes.1) << 32 | UInt64(bytes.2) << 24
            | UInt64(bytes.3) << 16 | UInt64(bytes.4) << 8 | UInt64(bytes.5)
    }

    public var description: String {
        Hex.string([bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5], uppercase: true, separator: ":")
    }

    public static func == (a: Self, b: Self) -> Bool { a.rawValue == b.rawValue }
    public func hash(into h: inout Hasher) { h.combine(rawValue) }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
}

/// A point on the transport's monotonic clock, in nanoseconds since that clock's origin.
/// The simulated radio's virtual clock and the real clock both produce these.
public struct RadioInstant: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var nanoseconds: UInt64
    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    public static let zero = RadioInstant(nanoseconds: 0)
    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }
    public var seconds: Double { Double(nanoseconds) / 1e9 }
    public var description: String { "\(seconds)s" }

    public static func + (a: Self, d: Duration) -> Self {
        let (s, atto) = d.components
        let ns = Int64(s) * 1_000_000_000 + atto / 1_000_000_000
        return RadioInstant(nanoseconds: UInt64(max(0, Int64(a.nanoseconds) + ns)))
    }

    public static func - (a: Self, b: Self) -> Duration {
        .nanoseconds(Int64(a.nanoseconds) - Int64(b.nanoseconds))
    }

    /// Now on the real monotonic clock (CLOCK_MONOTONIC via `ContinuousClock`), for real backends.
    public static func now() -> RadioInstant {
        // Read the origin first: on the first call its lazy initialisation would otherwise come
        // after `ContinuousClock.now`, making the difference negative (and UInt64(_:) trap).
        let origin = processStart
        let (s, atto) = (ContinuousClock.now - origin).components
        return RadioInstant(nanoseconds: UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, atto / 1_000_000_000)))
    }

    private static let processStart = ContinuousClock.now
}

/// One advertisement as heard by a scanner.
public struct AdvertisementReport: Sendable, Hashable {
    /// Address of the advertiser (often a random address on real devices).
    public var address: DeviceAddress
    /// Received signal strength in dBm, when the radio reports one.
    public var rssi: Int8?
    /// Bluetooth SIG company identifier of the Manufacturer Specific Data.
    public var companyID: UInt16
    /// The manufacturer data after the company identifier.
    public var data: [UInt8]
    /// When the report reached the host, on the transport's clock.
    public var timestamp: RadioInstant

    public init(address: DeviceAddress, rssi: Int8?, companyID: UInt16, data: [UInt8], timestamp: RadioInstant) {
        self.address = address
        self.rssi = rssi
        self.companyID = companyID
        self.data = data
        self.timestamp = timestamp
    }
}

/// What the radio is doing, for status displays and logs.
public struct RadioStatus: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case starting, scanning, advertising, recovering, stopped
    }
    /// Adapter name or a description of the radio (`hci0`, `simulated air`).
    public var adapter: String
    public var state: State
    /// Last time discovery was (re)started, when the backend restarts it periodically.
    public var lastDiscoveryRestart: RadioInstant?
    /// The most recent error, in words a person can act on.
    public var lastError: String?

    public init(adapter: String, state: State, lastDiscoveryRestart: RadioInstant? = nil, lastError: String? = nil) {
        self.adapter = adapter
        self.state = state
        self.lastDiscoveryRestart = lastDiscoveryRestart
        self.lastError = lastError
    }
}

/// The central (scanning) side of a radio.
public protocol CentralTransport: Sendable {
    /// Starts scanning and delivers every advertisement report whose manufacturer data has `companyID`.
    ///
    /// The stream finishes when the task consuming it is cancelled (scanning then stops)
    /// and throws when the radio fails for good. Transient trouble (a restarting daemon)
    /// is handled inside the backend and shows only in `status()`.
    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error>

    /// The same reports as ``advertisements(companyID:)``, in the batches the radio delivers them (same
    /// order, same end). The default hands over one report per batch; a backend that receives reports in
    /// bursts hands over each burst at once.
    func advertisementBatches(companyID: UInt16) -> AdvertisementBatches

    /// Connects to `device`, reads one characteristic of one service, disconnects.
    /// Throws `TransportError.timeout` when any step exceeds `timeout`.
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8]

    /// The radio's state now and on every change.
    func status() -> AsyncStream<RadioStatus>
}

extension CentralTransport {
    public func advertisementBatches(companyID: UInt16) -> AdvertisementBatches {
        AdvertisementBatches(advertisements(companyID: companyID))
    }
}

/// What a peripheral advertises: manufacturer data under one company ID, at a requested interval.
public struct AdvertisingPayload: Sendable, Hashable {
    public var companyID: UInt16
    public var data: [UInt8]
    /// Requested advertising interval (BLE allows 20 ms to 10.24 s). Backends that cannot
    /// honour it say so in their status and use what they can.
    public var interval: Duration
    /// Connectable advertising, needed when a GATT characteristic is served.
    public var connectable: Bool

    public init(companyID: UInt16, data: [UInt8], interval: Duration = .milliseconds(100), connectable: Bool = true) {
        self.companyID = companyID
        self.data = data
        self.interval = interval
        self.connectable = connectable
    }
}

/// The peripheral (advertising) side of a radio.
public protocol PeripheralTransport: Sendable {
    /// Starts advertising `payload`, or replaces what is being advertised.
    func advertise(_ payload: AdvertisingPayload) async throws
    /// Stops advertising. Idempotent.
    func stopAdvertising() async throws
    /// Serves `value` as the read value of `characteristic` in primary `service`, replacing any earlier value.
    func publish(service: UUID128, characteristic: UUID128, value: [UInt8]) async throws
    /// Withdraws everything this peripheral registered (advertisement and GATT). Idempotent.
    func shutdown() async
    /// The radio's state now and on every change.
    func status() -> AsyncStream<RadioStatus>
}

/// A 128-bit UUID, stored big-endian as written (`6e400001-b5a3-...`).
public struct UUID128: Sendable, Hashable, CustomStringConvertible {
    public let high: UInt64
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Parses the 8-4-4-4-12 hex form (case-insensitive). Returns nil otherwise.
    public init?(_ text: some StringProtocol) {
        let hex = String(text.filter { $0 != "-" })
        guard text.count == 36, hex.count == 32,
              let h = UInt64(hex.prefix(16), radix: 16), let l = UInt64(hex.suffix(16), radix: 16)
        else { return nil }
        self.init(high: h, low: l)
    }

    /// The 16 bytes, most significant first.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * $0)) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * $0)) }
    }

    /// Lower-case 8-4-4-4-12 form, as BlueZ prints it.
    public var description: String {
        let c = Array(Hex.string(bytes))
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-"
            + String(c[16..<20]) + "-" + String(c[20..<32])
    }
}

/// Errors every backend may raise, besides its own.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    case timeout(String)
    case notConnected(DeviceAddress)
    case characteristicNotFound(UUID128)
    case unsupported(String)
    case radioUnavailable(String)

    public var description: String {
        switch self {
        case .timeout(let what): "timed out: \(what)"
        case .notConnected(let a): "could not connect to \(a)"
        case .characteristicNotFound(let u): "characteristic \(u) not found"
        case .unsupported(let what): "not supported by this radio: \(what)"
        case .radioUnavailable(let why): "radio unavailable: \(why)"
        }
    }
}
