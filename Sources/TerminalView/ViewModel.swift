/// Everything the live view shows, filled in by the daemon from the tally state. Pure data.
public struct TallyViewModel: Sendable, Equatable, Codable {
    /// State of the current question.
    public struct Question: Sendable, Equatable, Codable {
        public var number: Int
        public var isOpen: Bool
        /// Time since the question was opened (frozen at close if the caller wishes).
        public var elapsed: Duration
        /// The question's title, when it has one.
        public var title: String?

        public init(number: Int, isOpen: Bool, elapsed: Duration, title: String? = nil) {
            self.number = number
            self.isOpen = isOpen
            self.elapsed = elapsed
            self.title = title
        }

        enum CodingKeys: String, CodingKey { case number, isOpen, elapsed, title }

        // Durations are seconds, as numbers (scripts read `status --json`).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            number = try c.decode(Int.self, forKey: .number)
            isOpen = try c.decode(Bool.self, forKey: .isOpen)
            elapsed = Format.duration(seconds: try c.decode(Double.self, forKey: .elapsed))
            title = try c.decodeIfPresent(String.self, forKey: .title)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(number, forKey: .number)
            try c.encode(isOpen, forKey: .isOpen)
            try c.encode(Format.seconds(elapsed), forKey: .elapsed)
            try c.encodeIfPresent(title, forKey: .title)
        }
    }

    /// One answer's current count.
    public struct Answer: Sendable, Equatable, Codable {
        /// Short label, e.g. "A".
        public var label: String
        public var count: Int
        /// The option's text, when the question has one ("Paris").
        public var text: String?

        public init(label: String, count: Int, text: String? = nil) {
            self.label = label
            self.count = count
            self.text = text
        }

        /// The label and the text, as the full view shows them ("A Paris").
        public var shown: String { text.map { label + " " + $0 } ?? label }
    }

    /// Rejected reports for one reason, and the devices they came from.
    public struct Rejection: Sendable, Equatable, Codable {
        public var reason: String
        /// Reports (radio packets), repeats included: the `r` breakdown and the logs.
        public var count: Int
        /// Devices (radio addresses) rejected for this reason; nil when not known (before a resume).
        public var devices: Int?

        public init(reason: String, count: Int, devices: Int? = nil) {
            self.reason = reason
            self.count = count
            self.devices = devices
        }
    }

    /// State of the radio backend.
    public struct Radio: Sendable, Equatable, Codable {
        /// Adapter name (e.g. "hci0"), nil if none found.
        public var adapter: String?
        public var scanning: Bool
        /// Time since discovery was last (re)started, if ever.
        public var sinceDiscoveryRestart: Duration?
        /// Errors since start.
        public var errors: Int
        /// The most recent error, shown while set.
        public var lastError: String?
        /// The frames the tally's beacon goes out in, nil while it does not broadcast.
        public var beacon: BeaconFrames?

        public init(adapter: String? = nil, scanning: Bool = false, sinceDiscoveryRestart: Duration? = nil,
                    errors: Int = 0, lastError: String? = nil, beacon: BeaconFrames? = nil) {
            self.adapter = adapter
            self.scanning = scanning
            self.sinceDiscoveryRestart = sinceDiscoveryRestart
            self.errors = errors
            self.lastError = lastError
            self.beacon = beacon
        }

        enum CodingKeys: String, CodingKey { case adapter, scanning, sinceDiscoveryRestart, errors, lastError, beacon }

        // Durations are seconds, as numbers.
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            adapter = try c.decodeIfPresent(String.self, forKey: .adapter)
            scanning = try c.decode(Bool.self, forKey: .scanning)
            sinceDiscoveryRestart = try c.decodeIfPresent(Double.self, forKey: .sinceDiscoveryRestart).map(Format.duration(seconds:))
            errors = try c.decode(Int.self, forKey: .errors)
            lastError = try c.decodeIfPresent(String.self, forKey: .lastError)
            beacon = try c.decodeIfPresent(BeaconFrames.self, forKey: .beacon)
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(adapter, forKey: .adapter)
            try c.encode(scanning, forKey: .scanning)
            try c.encodeIfPresent(sinceDiscoveryRestart.map(Format.seconds), forKey: .sinceDiscoveryRestart)
            try c.encode(errors, forKey: .errors)
            try c.encodeIfPresent(lastError, forKey: .lastError)
            try c.encodeIfPresent(beacon, forKey: .beacon)
        }
    }

    /// The advertising the beacon goes out in (docs/PROTOCOL.md §11.1, §11.11).
    public enum BeaconFrames: String, Sendable, Equatable, Codable {
        /// 24-byte frames, 3 acknowledgements each: in a room of 300 on the simulated air, 34 % of the
        /// students see "counted" within a second of being counted (TimeToCollect `--beacon`).
        case legacy
        /// Frames of up to 244 bytes, 42 acknowledgements each, signed by the poll's key (version 4).
        case extended
        /// Extended frames without signatures: the poll's join code commits to no key (typed by hand,
        /// or a poll created before protocol version 4).
        case extendedUnsigned = "extended-unsigned"

        /// What the instructor is told, once, when the beacon starts in these frames.
        public var explanation: String {
            switch self {
            case .legacy:
                "beacon in legacy frames (3 acknowledgements a frame): in a room of 300, two students in three see "
                    + "\"counted\" more than a second after their vote is counted; legacy frames are not signed: a student "
                    + "with the join code can show others a wrong question while sending; extended frames need a Bluetooth 5 "
                    + "controller and bluetoothd 5.69 or later, or --radio hci"
            case .extended: "beacon in extended frames, signed by this poll's key (42 acknowledgements a frame)"
            case .extendedUnsigned:
                "beacon in extended frames, not signed (this poll's join code commits to no key): a student with the "
                    + "join code can show others a wrong question while sending"
            }
        }
    }

    public var title: String
    /// The join code students type (shown large; digits, letters and '-').
    public var joinCode: String
    /// True for anonymous polls (shown in the header).
    public var anonymous: Bool
    /// Nil before the first question.
    public var question: Question?
    /// Answers in display order (usually A–D); counts are 0 while `countsHidden`.
    public var answers: [Answer]
    /// What the bars show when they are not one count per option: `Histogram · 12 ballots`,
    /// `Round 2 of 2 (instant-runoff)`; nil for single choice and true/false.
    public var barsCaption: String? = nil
    /// The projector page's address (`--web`), on screen while the poll runs; nil without a page.
    public var projectorURL: String?
    /// Lines under the bars, by the question's kind: the top combinations of a multi-select, the
    /// median and quartiles of a numeric question, every instant-runoff round and its outcome.
    /// Empty while the counts are hidden.
    public var details: [String] = []
    /// The counts are withheld (students can see the screen); voters counted stay visible.
    public var countsHidden: Bool
    /// Distinct voters counted for the current question.
    public var voters: Int
    /// Voters whose new or changed ballot the counts do not show yet (counts move in steps); nil when none.
    public var notYetShown: Int?
    public var votesPerSecond: Double
    /// Voters of the current question who changed their answer (a higher sequence with another answer
    /// replaced their counted one; `VoterRecord.changed`).
    public var changes: Int
    /// Rejections by reason, in display order.
    public var rejections: [Rejection]
    public var radio: Radio
    /// An alert shown prominently, e.g. "flood of forged votes".
    public var alert: String?
    /// A transient status message, e.g. "exported to /var/lib/clicker/poll-3.json".
    public var status: String?
    /// Students in a simulated room (`--simulate N`), so the screen can say why fewer are counted.
    public var simulatedRoom: Int?

    /// Why the voters counted differ from the simulated room, if they do.
    public var roomNote: String? {
        guard let room = simulatedRoom, room != voters else { return nil }
        if voters < room {
            return "\(room) simulated, \(voters) counted: \(room - voters) unheard (3% abstain; rest thinking/collided)"
        }
        return "\(room) simulated, \(voters) counted: \(voters - room) from other voters on the air"
    }

    public init(title: String = "Clicker", joinCode: String, anonymous: Bool = false, question: Question? = nil,
                answers: [Answer] = ["A", "B", "C", "D"].map { Answer(label: $0, count: 0) },
                countsHidden: Bool = false,
                voters: Int = 0, votesPerSecond: Double = 0, changes: Int = 0, rejections: [Rejection] = [],
                radio: Radio = Radio(), alert: String? = nil, status: String? = nil) {
        self.title = title
        self.joinCode = joinCode
        self.anonymous = anonymous
        self.question = question
        self.answers = answers
        self.countsHidden = countsHidden
        self.voters = voters
        self.votesPerSecond = votesPerSecond
        self.changes = changes
        self.rejections = rejections
        self.radio = radio
        self.alert = alert
        self.status = status
    }

    /// Total rejections over all reasons.
    public var rejectedTotal: Int { rejections.reduce(0) { $0 + $1.count } }
    /// Devices rejected, each once whatever its reasons (what the instructor looks at: people, not
    /// packets); nil when not known (a model that does not count them, a resumed poll's old rejections).
    public var rejectedDevices: Int?
}

/// Formatting helpers shared by the full-screen and plain renderers.
public enum Format {
    /// `1 device`, `3 devices`.
    public static func devices(_ n: Int) -> String { n == 1 ? "1 device" : "\(n) devices" }

    /// `m:ss`, or `h:mm:ss` from one hour on.
    public static func clock(_ d: Duration) -> String {
        let total = max(0, Int(d.components.seconds))
        let h = total / 3600, m = (total / 60) % 60, s = total % 60
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return h > 0 ? "\(h):\(two(m)):\(two(s))" : "\(m):\(two(s))"
    }

    /// Compact age: `42s`, `3m`, `2h`.
    public static func age(_ d: Duration) -> String {
        let s = max(0, Int(d.components.seconds))
        if s < 120 { return "\(s)s" }
        if s < 7200 { return "\(s / 60)m" }
        return "\(s / 3600)h"
    }

    /// Seconds as a number (JSON).
    public static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// A duration from seconds; non-finite or negative values give zero.
    public static func duration(seconds s: Double) -> Duration {
        guard s.isFinite, s > 0 else { return .zero }
        return .milliseconds(Int64(min(s, 1e12) * 1000))
    }

    /// Fixed one-decimal number, e.g. `12.5`.
    public static func oneDecimal(_ v: Double) -> String {
        guard v.isFinite else { return "-" }
        let tenths = Int((v * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        return "\(sign)\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// Percentage of `count` in `total` with one decimal (`0.0` when total is 0).
    public static func percent(_ count: Int, of total: Int) -> String {
        total > 0 ? oneDecimal(Double(count) * 100 / Double(total)) + "%" : "0.0%"
    }
}
