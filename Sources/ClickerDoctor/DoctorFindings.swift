/// What a doctor found on this machine: the facts the probes gathered, nothing concluded yet
/// (``DoctorReport`` concludes). Plain values, so a report can be built and tested without a radio.
public struct DoctorFindings: Sendable, Codable, Hashable {
    /// Which program asks: the tally (an instructor's laptop) or a voter (a student's board).
    public enum Role: String, Sendable, Codable { case tally, vote }

    /// Whether this user may use the radio: for BlueZ, what bluetoothd's D-Bus policy answered to a call
    /// of an org.bluez method; for raw HCI, whether the process holds CAP_NET_RAW and CAP_NET_ADMIN.
    public enum Access: Sendable, Codable, Hashable {
        case allowed
        /// The answer that refused it (an AccessDenied error, or the capabilities missing).
        case denied(String)
        /// Not learnt: nothing answered (no bus, no bluetoothd).
        case unknown
    }

    /// The outcome of something the doctor tried on the radio.
    public enum Trial: Sendable, Codable, Hashable {
        case worked
        /// Tried, and refused: why.
        case failed(String)
        /// Not tried: why (no adapter, no access, the radio does not offer it).
        case notTried(String)

        public var worked: Bool { self == .worked }
    }

    /// One adapter, as bluetoothd lists it (org.bluez.Adapter1 and LEAdvertisingManager1).
    public struct Adapter: Sendable, Codable, Hashable {
        public var name: String
        public var address: String?
        public var powered: Bool
        /// `SupportedSecondaryChannels` is listed: the kernel found LE Extended Advertising (Bluetooth 5)
        /// on the controller.
        public var extendedAdvertising: Bool
        /// `SupportedCapabilities.MaxAdvLen`: the advertising data the controller takes (31, or up to 251).
        public var maxAdvertisingLength: Int?
        /// `SupportedFeatures` (bluetoothd lists them with experimental features on).
        public var features: [String]
        /// Whether LEAdvertisingManager1 is there at all (no advertising otherwise).
        public var advertising: Bool

        public init(name: String, address: String? = nil, powered: Bool, extendedAdvertising: Bool,
                    maxAdvertisingLength: Int? = nil, features: [String] = [], advertising: Bool = true) {
            self.name = name
            self.address = address
            self.powered = powered
            self.extendedAdvertising = extendedAdvertising
            self.maxAdvertisingLength = maxAdvertisingLength
            self.features = features
            self.advertising = advertising
        }
    }

    /// bluetoothd's version and where it was read.
    public struct DaemonVersion: Sendable, Codable, Hashable {
        /// "5.66"; nil when nothing answered with a version.
        public var version: String?
        /// Where: "bluetoothd --version (PATH)", "the running bluetoothd (its executable, from D-Bus)", or
        /// why it is not known.
        public var source: String
        public init(version: String?, source: String) {
            self.version = version
            self.source = source
        }

        /// The version as (major, minor), when it reads as one.
        public var number: (Int, Int)? {
            guard let v = version else { return nil }
            let parts = v.split(separator: ".").map { Int($0) }
            guard parts.count >= 2, let major = parts[0], let minor = parts[1] else { return nil }
            return (major, minor)
        }
    }

    public var role: Role
    /// "bluez" or "hci".
    public var radio: String
    /// Why the radio could not be reached at all (no system bus, bluetoothd not running); nil when it was.
    public var unreachable: String?
    public var access: Access
    public var bluetoothd: DaemonVersion
    public var adapters: [Adapter]
    /// The adapter the tally or voter would use (by `--adapter`, or the first powered); nil: none fits.
    public var chosen: String?
    /// Why none was chosen (the adapter named is not there, none is powered).
    public var notChosen: String?
    /// Broadcasting a frame no follower takes for one while the adapter scans.
    public var broadcastWhileScanning: Trial
    /// Registering an extended frame (the beacon's capability probe).
    public var extendedFrames: Trial
    /// The longest beacon frame the radio takes (24 legacy; up to 222 extended).
    public var frameLength: Int?
    /// The voter's doctor: whether a tally's beacon was heard while it listened (nil: not listened).
    public var tallyHeard: Bool?
    /// How long it listened, seconds.
    public var listenedSeconds: Double?

    public init(role: Role, radio: String = "bluez", unreachable: String? = nil, access: Access = .unknown,
                bluetoothd: DaemonVersion = DaemonVersion(version: nil, source: "not looked up"),
                adapters: [Adapter] = [], chosen: String? = nil, notChosen: String? = nil,
                broadcastWhileScanning: Trial = .notTried("no adapter"), extendedFrames: Trial = .notTried("no adapter"),
                frameLength: Int? = nil, tallyHeard: Bool? = nil, listenedSeconds: Double? = nil) {
        self.role = role
        self.radio = radio
        self.unreachable = unreachable
        self.access = access
        self.bluetoothd = bluetoothd
        self.adapters = adapters
        self.chosen = chosen
        self.notChosen = notChosen
        self.broadcastWhileScanning = broadcastWhileScanning
        self.extendedFrames = extendedFrames
        self.frameLength = frameLength
        self.tallyHeard = tallyHeard
        self.listenedSeconds = listenedSeconds
    }
}
