import ClickerTransport

// Byte-level encoding of the HCI commands this backend sends (Core Specification v5.4,
// Vol 4 Part E §5.4.1 and §7). Pure: no I/O. Every multi-octet field is little-endian.

/// A 16-bit HCI command opcode: OGF in the upper 6 bits, OCF in the lower 10.
public struct HCIOpcode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Builds an opcode from its group (OGF, 6 bits) and command (OCF, 10 bits) fields.
    public init(ogf: UInt8, ocf: UInt16) {
        rawValue = UInt16(ogf & 0x3F) << 10 | (ocf & 0x03FF)
    }
    public var ogf: UInt8 { UInt8(truncatingIfNeeded: rawValue >> 10) }
    public var ocf: UInt16 { rawValue & 0x03FF }

    /// HCI_Set_Event_Mask (Controller & Baseband, OCF 0x0001).
    public static let setEventMask = HCIOpcode(ogf: 0x03, ocf: 0x0001)
    /// HCI_Reset (Controller & Baseband, OCF 0x0003).
    public static let reset = HCIOpcode(ogf: 0x03, ocf: 0x0003)
    /// HCI_Read_BD_ADDR (Informational, OCF 0x0009).
    public static let readBDAddr = HCIOpcode(ogf: 0x04, ocf: 0x0009)
    /// HCI_LE_Set_Event_Mask (LE, OCF 0x0001).
    public static let leSetEventMask = HCIOpcode(ogf: 0x08, ocf: 0x0001)
    /// HCI_LE_Set_Random_Address (LE, OCF 0x0005).
    public static let leSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0005)
    /// HCI_LE_Set_Advertising_Parameters (LE, OCF 0x0006).
    public static let leSetAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0006)
    /// HCI_LE_Set_Advertising_Data (LE, OCF 0x0008).
    public static let leSetAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0008)
    /// HCI_LE_Set_Advertising_Enable (LE, OCF 0x000A).
    public static let leSetAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x000A)
    /// HCI_LE_Set_Scan_Parameters (LE, OCF 0x000B).
    public static let leSetScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x000B)
    /// HCI_LE_Set_Scan_Enable (LE, OCF 0x000C).
    public static let leSetScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x000C)

    public var description: String {
        let name: String = switch self {
        case .setEventMask: "Set Event Mask"
        case .reset: "Reset"
        case .readBDAddr: "Read BD_ADDR"
        case .leSetEventMask: "LE Set Event Mask"
        case .leSetRandomAddress: "LE Set Random Address"
        case .leSetAdvertisingParameters: "LE Set Advertising Parameters"
        case .leSetAdvertisingData: "LE Set Advertising Data"
        case .leSetAdvertisingEnable: "LE Set Advertising Enable"
        case .leSetScanParameters: "LE Set Scan Parameters"
        case .leSetScanEnable: "LE Set Scan Enable"
        default: "opcode"
        }
        return name + " (0x" + hex16(rawValue) + ")"
    }
}

/// The address a controller uses for its own advertising or scanning PDUs.
public enum OwnAddressType: UInt8, Sendable, Hashable {
    /// The controller's public address (what Read BD_ADDR returns).
    case publicAddress = 0x00
    /// The random address set with LE Set Random Address.
    case randomAddress = 0x01
}

/// Legacy advertising PDU types (Advertising_Type of LE Set Advertising Parameters).
public enum LegacyAdvertisingType: UInt8, Sendable, Hashable {
    /// ADV_IND: connectable and scannable undirected.
    case connectableUndirected = 0x00
    /// ADV_SCAN_IND: scannable undirected, not connectable.
    case scannableUndirected = 0x02
    /// ADV_NONCONN_IND: neither connectable nor scannable.
    case nonConnectableUndirected = 0x03
}

/// Conversions between durations and the controller's 0.625 ms time slots.
public enum HCITimeSlots {
    /// Nanoseconds per slot.
    public static let slotNanoseconds: Int64 = 625_000

    /// `duration` in 0.625 ms slots, rounded to the nearest slot and clamped to `range`.
    public static func slots(_ duration: Duration, clampedTo range: ClosedRange<UInt16>) -> UInt16 {
        let (s, atto) = duration.components
        // Saturate rather than overflow for absurd durations.
        let ns = s > 1_000_000 ? Int64.max / 2 : (s < 0 ? 0 : s * 1_000_000_000 + atto / 1_000_000_000)
        let slots = (ns + slotNanoseconds / 2) / slotNanoseconds
        return UInt16(clamping: min(max(slots, Int64(range.lowerBound)), Int64(range.upperBound)))
    }

    /// `slots` as a duration.
    public static func duration(slots: UInt16) -> Duration { .nanoseconds(Int64(slots) * slotNanoseconds) }

    /// Valid advertising interval: 20 ms to 10.24 s.
    public static let advertisingIntervalRange: ClosedRange<UInt16> = 0x0020...0x4000
    /// Valid scan interval and window: 2.5 ms to 10.24 s.
    public static let scanIntervalRange: ClosedRange<UInt16> = 0x0004...0x4000
}

/// Parameters of HCI_LE_Set_Advertising_Parameters (15 octets).
public struct AdvertisingParameters: Sendable, Hashable {
    /// Minimum and maximum advertising interval in 0.625 ms slots (0x0020–0x4000).
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var type: LegacyAdvertisingType
    public var ownAddressType: OwnAddressType
    /// Advertising channels used: bit 0 = 37, bit 1 = 38, bit 2 = 39.
    public var channelMap: UInt8
    /// 0x00: process scan and connection requests from all devices.
    public var filterPolicy: UInt8

    public init(intervalMin: UInt16, intervalMax: UInt16, type: LegacyAdvertisingType,
                ownAddressType: OwnAddressType = .publicAddress, channelMap: UInt8 = 0x07, filterPolicy: UInt8 = 0x00) {
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.type = type
        self.ownAddressType = ownAddressType
        self.channelMap = channelMap
        self.filterPolicy = filterPolicy
    }
}

/// Parameters of HCI_LE_Set_Scan_Parameters (7 octets).
public struct ScanParameters: Sendable, Hashable {
    /// Active scanning sends SCAN_REQs; passive only listens.
    public var active: Bool
    /// Scan interval and window in 0.625 ms slots (0x0004–0x4000, window ≤ interval).
    public var interval: UInt16
    public var window: UInt16
    public var ownAddressType: OwnAddressType
    /// 0x00: accept all advertising packets.
    public var filterPolicy: UInt8

    public init(active: Bool = false, interval: UInt16, window: UInt16,
                ownAddressType: OwnAddressType = .publicAddress, filterPolicy: UInt8 = 0x00) {
        self.active = active
        self.interval = interval
        self.window = window
        self.ownAddressType = ownAddressType
        self.filterPolicy = filterPolicy
    }
}

/// One HCI command packet: opcode and parameters.
public struct HCICommand: Sendable, Hashable, CustomStringConvertible {
    public var opcode: HCIOpcode
    public var parameters: [UInt8]

    public init(opcode: HCIOpcode, parameters: [UInt8] = []) {
        self.opcode = opcode
        self.parameters = parameters
    }

    /// The packet as written to an HCI user-channel socket: the H4 indicator 0x01, the
    /// opcode (little-endian), the parameter length, then the parameters.
    public var packet: [UInt8] {
        [0x01, UInt8(truncatingIfNeeded: opcode.rawValue), UInt8(truncatingIfNeeded: opcode.rawValue >> 8),
         UInt8(truncatingIfNeeded: parameters.count)] + parameters
    }

    public var description: String { opcode.description }

    // MARK: Builders

    /// HCI_Reset: no parameters.
    public static let reset = HCICommand(opcode: .reset)

    /// HCI_Read_BD_ADDR: no parameters.
    public static let readBDAddr = HCICommand(opcode: .readBDAddr)

    /// HCI_Set_Event_Mask: 8-octet mask.
    public static func setEventMask(_ mask: UInt64) -> HCICommand {
        HCICommand(opcode: .setEventMask, parameters: le64(mask))
    }

    /// Default event mask (Core spec) plus bit 61, LE Meta event, without which no LE event is delivered.
    public static let eventMaskWithLEMeta: UInt64 = 0x0000_1FFF_FFFF_FFFF | (1 << 61)

    /// HCI_LE_Set_Event_Mask: 8-octet mask.
    public static func leSetEventMask(_ mask: UInt64) -> HCICommand {
        HCICommand(opcode: .leSetEventMask, parameters: le64(mask))
    }

    /// Default LE event mask (subevents 0x01–0x05) plus bit 12, LE Extended Advertising Report.
    public static let leEventMaskWithExtendedReports: UInt64 = 0x0000_0000_0000_001F | (1 << 12)

    /// HCI_LE_Set_Random_Address: the 6-octet address, least significant octet first.
    public static func leSetRandomAddress(_ address: DeviceAddress) -> HCICommand {
        HCICommand(opcode: .leSetRandomAddress, parameters: addressLE(address))
    }

    /// HCI_LE_Set_Advertising_Parameters. Throws `HCIError.invalidParameter` for values the
    /// specification forbids. Peer address fields (only for directed advertising) are zero.
    public static func leSetAdvertisingParameters(_ p: AdvertisingParameters) throws(HCIError) -> HCICommand {
        guard HCITimeSlots.advertisingIntervalRange.contains(p.intervalMin),
              HCITimeSlots.advertisingIntervalRange.contains(p.intervalMax), p.intervalMin <= p.intervalMax
        else { throw .invalidParameter("advertising interval \(p.intervalMin)…\(p.intervalMax) slots (0x0020–0x4000, min ≤ max)") }
        guard p.channelMap & 0x07 != 0, p.channelMap & ~0x07 == 0
        else { throw .invalidParameter("advertising channel map 0x\(hex8(p.channelMap))") }
        guard p.filterPolicy <= 0x03 else { throw .invalidParameter("advertising filter policy \(p.filterPolicy)") }
        var b = le16(p.intervalMin) + le16(p.intervalMax)
        b.append(p.type.rawValue)
        b.append(p.ownAddressType.rawValue)
        b.append(0x00)                              // Peer_Address_Type (unused: undirected)
        b.append(contentsOf: [0, 0, 0, 0, 0, 0])    // Peer_Address
        b.append(p.channelMap)
        b.append(p.filterPolicy)
        return HCICommand(opcode: .leSetAdvertisingParameters, parameters: b)
    }

    /// HCI_LE_Set_Advertising_Data: length octet, then 31 octets (data zero-padded).
    /// Throws `HCIError.advertisingDataTooLong` beyond 31 octets.
    public static func leSetAdvertisingData(_ data: [UInt8]) throws(HCIError) -> HCICommand {
        guard data.count <= AdvertisingData.legacyMaximumLength else {
            throw .advertisingDataTooLong(bytes: data.count, maximum: AdvertisingData.legacyMaximumLength)
        }
        var b = [UInt8(data.count)] + data
        b.append(contentsOf: repeatElement(0, count: AdvertisingData.legacyMaximumLength - data.count))
        return HCICommand(opcode: .leSetAdvertisingData, parameters: b)
    }

    /// HCI_LE_Set_Advertising_Enable: one octet.
    public static func leSetAdvertisingEnable(_ enable: Bool) -> HCICommand {
        HCICommand(opcode: .leSetAdvertisingEnable, parameters: [enable ? 1 : 0])
    }

    /// HCI_LE_Set_Scan_Parameters. Throws `HCIError.invalidParameter` for out-of-range values.
    public static func leSetScanParameters(_ p: ScanParameters) throws(HCIError) -> HCICommand {
        guard HCITimeSlots.scanIntervalRange.contains(p.interval), HCITimeSlots.scanIntervalRange.contains(p.window),
              p.window <= p.interval
        else { throw .invalidParameter("scan interval \(p.interval) / window \(p.window) slots (0x0004–0x4000, window ≤ interval)") }
        guard p.filterPolicy <= 0x03 else { throw .invalidParameter("scan filter policy \(p.filterPolicy)") }
        var b: [UInt8] = [p.active ? 0x01 : 0x00]
        b += le16(p.interval) + le16(p.window)
        b.append(p.ownAddressType.rawValue)
        b.append(p.filterPolicy)
        return HCICommand(opcode: .leSetScanParameters, parameters: b)
    }

    /// HCI_LE_Set_Scan_Enable: enable, filter duplicates.
    public static func leSetScanEnable(_ enable: Bool, filterDuplicates: Bool) -> HCICommand {
        HCICommand(opcode: .leSetScanEnable, parameters: [enable ? 1 : 0, filterDuplicates ? 1 : 0])
    }
}

// MARK: Little-endian helpers

@inline(__always) func le16(_ v: UInt16) -> [UInt8] {
    [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)]
}

@inline(__always) func le64(_ v: UInt64) -> [UInt8] {
    (0..<8).map { UInt8(truncatingIfNeeded: v >> (8 * UInt64($0))) }
}

/// A device address as it travels over HCI: least significant octet first.
func addressLE(_ a: DeviceAddress) -> [UInt8] {
    [a.bytes.5, a.bytes.4, a.bytes.3, a.bytes.2, a.bytes.1, a.bytes.0]
}

func hex8(_ v: UInt8) -> String {
    let s = String(v, radix: 16, uppercase: true)
    return s.count == 1 ? "0" + s : s
}

func hex16(_ v: UInt16) -> String {
    hex8(UInt8(truncatingIfNeeded: v >> 8)) + hex8(UInt8(truncatingIfNeeded: v))
}
