import ClickerTransport

// Decoding of the HCI events this backend consumes (Core Specification v5.4, Vol 4 Part E §5.4.4
// and §7.7). Pure: no I/O. Every input is untrusted: malformed packets yield `HCIParseError`,
// never a trap.

/// Why an HCI packet could not be decoded.
public enum HCIParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A zero-length packet.
    case empty
    /// The H4 packet indicator is not 0x04 (event).
    case notAnEvent(packetType: UInt8)
    /// The packet ends before `what`, which starts at `offset` (counted from the event code).
    case truncated(what: String, offset: Int)
    /// The event header's parameter length disagrees with the bytes that follow it.
    case lengthMismatch(declared: Int, actual: Int)
    /// A field holds a value the specification does not allow.
    case invalidValue(what: String, value: Int)
    /// Bytes left over after the last field of the event.
    case trailingBytes(count: Int)
    /// An AD structure's length runs past the end of the advertising data.
    case malformedADStructure(offset: Int)

    public var description: String {
        switch self {
        case .empty: "empty HCI packet"
        case .notAnEvent(let t): "not an HCI event packet (indicator 0x\(hex8(t)))"
        case .truncated(let what, let offset): "HCI event truncated in \(what) at offset \(offset)"
        case .lengthMismatch(let d, let a): "HCI event declares \(d) parameter bytes but carries \(a)"
        case .invalidValue(let what, let v): "HCI event has invalid \(what) \(v)"
        case .trailingBytes(let n): "HCI event has \(n) trailing bytes"
        case .malformedADStructure(let o): "malformed AD structure at offset \(o) of the advertising data"
        }
    }
}

/// HCI_Command_Complete (event 0x0E).
public struct CommandComplete: Sendable, Hashable {
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode
    /// Return parameters; for every command this backend sends, the first is the status.
    public var returnParameters: [UInt8]
    /// The status octet (0x00 = success), when the event carries one.
    public var status: UInt8? { returnParameters.first }
}

/// HCI_Command_Status (event 0x0F).
public struct CommandStatus: Sendable, Hashable {
    public var status: UInt8
    public var numHCICommandPackets: UInt8
    public var opcode: HCIOpcode
}

/// One report of an LE Advertising Report (subevent 0x02) or LE Extended Advertising Report
/// (subevent 0x0D). `data` is a slice of the event packet (no copy).
public struct LEAdvertisingReport: Sendable, Hashable {
    /// Completeness of an extended report's data (bits 5–6 of its event type).
    public enum DataStatus: UInt8, Sendable, Hashable {
        case complete = 0, incompleteMoreToCome = 1, incompleteTruncated = 2, reserved = 3
    }
    /// Fields only extended reports carry.
    public struct ExtendedFields: Sendable, Hashable {
        public var primaryPHY: UInt8
        public var secondaryPHY: UInt8
        public var advertisingSID: UInt8
        /// Transmit power in dBm; nil when the controller reports 127 (not available).
        public var txPower: Int8?
        public var periodicAdvertisingInterval: UInt16
        public var directAddressType: UInt8
        public var directAddress: DeviceAddress
    }

    /// Legacy: 0x00 ADV_IND … 0x04 SCAN_RSP. Extended: the 16-bit event-type bit field.
    public var eventType: UInt16
    public var addressType: UInt8
    public var address: DeviceAddress
    /// RSSI in dBm; nil when the controller reports 127 (not available).
    public var rssi: Int8?
    public var data: ArraySlice<UInt8>
    /// Present for extended reports only.
    public var extended: ExtendedFields?

    /// Whether the report's data is whole (legacy reports always are).
    public var dataStatus: DataStatus {
        guard extended != nil else { return .complete }
        return DataStatus(rawValue: UInt8((eventType >> 5) & 0x03)) ?? .reserved
    }
}

/// A decoded HCI event.
public enum HCIEvent: Sendable, Hashable {
    case commandComplete(CommandComplete)
    case commandStatus(CommandStatus)
    /// HCI_Hardware_Error (0x10): the controller needs a reset.
    case hardwareError(code: UInt8)
    /// LE Meta subevent 0x02.
    case leAdvertisingReport([LEAdvertisingReport])
    /// LE Meta subevent 0x0D.
    case leExtendedAdvertisingReport([LEAdvertisingReport])
    /// Any other LE Meta subevent, undecoded.
    case leMeta(subevent: UInt8, parameters: [UInt8])
    /// Any other event, undecoded.
    case other(code: UInt8, parameters: [UInt8])

    public static let codeCommandComplete: UInt8 = 0x0E
    public static let codeCommandStatus: UInt8 = 0x0F
    public static let codeHardwareError: UInt8 = 0x10
    public static let codeLEMeta: UInt8 = 0x3E
    public static let subeventAdvertisingReport: UInt8 = 0x02
    public static let subeventExtendedAdvertisingReport: UInt8 = 0x0D
    /// Most data one report of an LE Extended Advertising Report event carries (Data_Length
    /// 0x00–0xE5): longer advertising data arrives in several reports, "incomplete, more to come".
    public static let extendedReportMaximumDataLength = 229

    /// Decodes one packet as read from an HCI user-channel socket: indicator 0x04, event code,
    /// parameter length, parameters.
    public static func parse(packet: [UInt8]) throws(HCIParseError) -> HCIEvent {
        let (code, params) = try eventParameters(packet)
        switch code {
        case codeCommandComplete:
            guard params.count >= 3 else { throw .truncated(what: "Command Complete header", offset: 2) }
            let p = params.startIndex
            return .commandComplete(CommandComplete(
                numHCICommandPackets: packet[p],
                opcode: HCIOpcode(rawValue: UInt16(packet[p + 1]) | UInt16(packet[p + 2]) << 8),
                returnParameters: Array(packet[(p + 3)...])))
        case codeCommandStatus:
            guard params.count >= 4 else { throw .truncated(what: "Command Status", offset: 2) }
            guard params.count == 4 else { throw .trailingBytes(count: params.count - 4) }
            let p = params.startIndex
            return .commandStatus(CommandStatus(
                status: packet[p], numHCICommandPackets: packet[p + 1],
                opcode: HCIOpcode(rawValue: UInt16(packet[p + 2]) | UInt16(packet[p + 3]) << 8)))
        case codeHardwareError:
            guard params.count >= 1 else { throw .truncated(what: "Hardware Error", offset: 2) }
            guard params.count == 1 else { throw .trailingBytes(count: params.count - 1) }
            return .hardwareError(code: packet[params.startIndex])
        case codeLEMeta:
            guard params.count >= 1 else { throw .truncated(what: "LE Meta subevent code", offset: 2) }
            let sub = packet[params.startIndex]
            switch sub {
            case subeventAdvertisingReport, subeventExtendedAdvertisingReport:
                var reports: [LEAdvertisingReport] = []
                try forEachAdvertisingReport(packet) { reports.append($0) }
                return sub == subeventAdvertisingReport ? .leAdvertisingReport(reports) : .leExtendedAdvertisingReport(reports)
            default:
                return .leMeta(subevent: sub, parameters: Array(packet[(params.startIndex + 1)...]))
            }
        default:
            return .other(code: code, parameters: Array(packet[params]))
        }
    }

    /// Validates the H4 indicator and the event header; returns the event code and the index
    /// range of the parameters within `packet`.
    @inline(__always)
    static func eventParameters(_ packet: [UInt8]) throws(HCIParseError) -> (UInt8, Range<Int>) {
        guard let indicator = packet.first else { throw .empty }
        guard indicator == 0x04 else { throw .notAnEvent(packetType: indicator) }
        guard packet.count >= 3 else { throw .truncated(what: "event header", offset: packet.count - 1) }
        let declared = Int(packet[2])
        let actual = packet.count - 3
        guard declared == actual else {
            if actual < declared { throw .truncated(what: "event parameters", offset: packet.count - 1) }
            throw .lengthMismatch(declared: declared, actual: actual)
        }
        return (packet[1], 3..<packet.count)
    }

    /// Whether `packet` is an LE Meta event carrying advertising reports (subevent 0x02 or 0x0D).
    @inlinable
    public static func isAdvertisingReportEvent(_ packet: [UInt8]) -> Bool {
        packet.count >= 4 && packet[0] == 0x04 && packet[1] == codeLEMeta
            && (packet[3] == subeventAdvertisingReport || packet[3] == subeventExtendedAdvertisingReport)
    }

    /// Walks every report of an LE Advertising Report or LE Extended Advertising Report event
    /// packet. The whole event is validated before `body` runs once, so a malformed event
    /// yields no reports at all.
    public static func forEachAdvertisingReport(_ packet: [UInt8],
                                                _ body: (LEAdvertisingReport) -> Void) throws(HCIParseError) {
        try validateAdvertisingReports(packet)
        let extended = packet[3] == subeventExtendedAdvertisingReport
        let count = Int(packet[4])
        var i = 5
        for _ in 0..<count {
            if extended {
                let eventType = UInt16(packet[i]) | UInt16(packet[i + 1]) << 8
                let length = Int(packet[i + 23])
                let rssi = Int8(bitPattern: packet[i + 13])
                let tx = Int8(bitPattern: packet[i + 12])
                body(LEAdvertisingReport(
                    eventType: eventType, addressType: packet[i + 2], address: address(packet, at: i + 3),
                    rssi: rssi == 127 ? nil : rssi, data: packet[(i + 24)..<(i + 24 + length)],
                    extended: .init(primaryPHY: packet[i + 9], secondaryPHY: packet[i + 10], advertisingSID: packet[i + 11],
                                    txPower: tx == 127 ? nil : tx,
                                    periodicAdvertisingInterval: UInt16(packet[i + 14]) | UInt16(packet[i + 15]) << 8,
                                    directAddressType: packet[i + 16], directAddress: address(packet, at: i + 17))))
                i += 24 + length
            } else {
                let length = Int(packet[i + 8])
                let rssi = Int8(bitPattern: packet[i + 9 + length])
                body(LEAdvertisingReport(
                    eventType: UInt16(packet[i]), addressType: packet[i + 1], address: address(packet, at: i + 2),
                    rssi: rssi == 127 ? nil : rssi, data: packet[(i + 9)..<(i + 9 + length)], extended: nil))
                i += 10 + length
            }
        }
    }

    /// Checks the structure of an advertising-report event: header, report count, every
    /// report's length, and that nothing follows the last report.
    @inline(__always)
    static func validateAdvertisingReports(_ packet: [UInt8]) throws(HCIParseError) {
        let (code, params) = try eventParameters(packet)
        guard code == codeLEMeta else { throw .invalidValue(what: "event code for advertising reports", value: Int(code)) }
        guard params.count >= 1 else { throw .truncated(what: "LE Meta subevent code", offset: 2) }
        let sub = packet[3]
        guard sub == subeventAdvertisingReport || sub == subeventExtendedAdvertisingReport
        else { throw .invalidValue(what: "LE Meta subevent for advertising reports", value: Int(sub)) }
        guard packet.count >= 5 else { throw .truncated(what: "Num_Reports", offset: 3) }
        let count = Int(packet[4])
        guard count >= 1 else { throw .invalidValue(what: "Num_Reports", value: 0) }
        let extended = sub == subeventExtendedAdvertisingReport
        let fixed = extended ? 24 : 10       // octets of one report besides its data
        let lengthOffset = extended ? 23 : 8 // offset of Data_Length within a report
        var i = 5
        for _ in 0..<count {
            guard i + fixed <= packet.count else { throw .truncated(what: "advertising report", offset: i - 1) }
            let length = Int(packet[i + lengthOffset])
            if !extended && length > AdvertisingData.legacyMaximumLength {
                throw .invalidValue(what: "legacy advertising Data_Length", value: length)
            }
            if extended && length > HCIEvent.extendedReportMaximumDataLength {
                throw .invalidValue(what: "extended advertising Data_Length", value: length)
            }
            guard i + fixed + length <= packet.count else { throw .truncated(what: "advertising data", offset: i + lengthOffset) }
            i += fixed + length
        }
        guard i == packet.count else { throw .trailingBytes(count: packet.count - i) }
    }

    @inline(__always)
    static func address(_ p: [UInt8], at i: Int) -> DeviceAddress {
        DeviceAddress(p[i + 5], p[i + 4], p[i + 3], p[i + 2], p[i + 1], p[i])
    }
}
