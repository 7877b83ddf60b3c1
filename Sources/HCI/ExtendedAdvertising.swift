import ClickerTransport

// The LE extended advertising and scanning commands (Core Specification v5.4, Vol 4 Part E
// §7.8.53–§7.8.65) and the one decision they force. Pure: no I/O.
//
// A controller that has seen one extended advertising or scanning command refuses the legacy ones
// (and the other way round) until it is reset (Vol 4 Part E §3.1.1: "a Host should not issue legacy
// commands to a Controller after issuing at least one extended command"; controllers answer
// Command Disallowed). So each backend picks its `HCIAdvertisingMode` once, when it sets the
// controller up, and sends every advertising and scanning command of that family.

extension HCIOpcode {
    /// HCI_LE_Read_Local_Supported_Features (LE, OCF 0x0003).
    public static let leReadLocalSupportedFeatures = HCIOpcode(ogf: 0x08, ocf: 0x0003)
    /// HCI_LE_Set_Advertising_Set_Random_Address (LE, OCF 0x0035).
    public static let leSetAdvertisingSetRandomAddress = HCIOpcode(ogf: 0x08, ocf: 0x0035)
    /// HCI_LE_Set_Extended_Advertising_Parameters [v1] (LE, OCF 0x0036).
    public static let leSetExtendedAdvertisingParameters = HCIOpcode(ogf: 0x08, ocf: 0x0036)
    /// HCI_LE_Set_Extended_Advertising_Data (LE, OCF 0x0037).
    public static let leSetExtendedAdvertisingData = HCIOpcode(ogf: 0x08, ocf: 0x0037)
    /// HCI_LE_Set_Extended_Advertising_Enable (LE, OCF 0x0039).
    public static let leSetExtendedAdvertisingEnable = HCIOpcode(ogf: 0x08, ocf: 0x0039)
    /// HCI_LE_Read_Maximum_Advertising_Data_Length (LE, OCF 0x003A).
    public static let leReadMaximumAdvertisingDataLength = HCIOpcode(ogf: 0x08, ocf: 0x003A)
    /// HCI_LE_Set_Extended_Scan_Parameters (LE, OCF 0x0041).
    public static let leSetExtendedScanParameters = HCIOpcode(ogf: 0x08, ocf: 0x0041)
    /// HCI_LE_Set_Extended_Scan_Enable (LE, OCF 0x0042).
    public static let leSetExtendedScanEnable = HCIOpcode(ogf: 0x08, ocf: 0x0042)
}

/// Which family of advertising and scanning commands a controller gets, decided once per controller.
public enum HCIAdvertisingMode: Sendable, Hashable {
    /// LE Set Advertising / Scan Parameters, Data, Enable (Bluetooth 4.x commands).
    case legacy
    /// LE Set Extended Advertising / Scan commands; the controller takes up to `maximumDataLength`
    /// octets of advertising data per set (LE Read Maximum Advertising Data Length).
    case extended(maximumDataLength: Int)

    /// Octets of advertising data one LE Set Extended Advertising Data command carries unfragmented
    /// (Operation "complete data": the parameter length 255 minus 4 header octets), and Linux's
    /// `HCI_MAX_EXT_AD_LENGTH`.
    public static let extendedDataPerCommand = 251

    /// Bit 12 of the LE features (LE Read Local Supported Features): LE Extended Advertising.
    public static let extendedAdvertisingFeatureBit = 12

    /// The decision: extended when the LE features have bit 12 set and the controller takes at least
    /// a legacy advertisement's 31 octets in a set, legacy otherwise (also when the features could
    /// not be read). A controller that announces the feature but does not answer LE Read Maximum
    /// Advertising Data Length (`maximumDataLength` nil; btvirt of BlueZ 5.66 answers Unknown HCI Command) gets the extended
    /// commands with 31 octets, as Linux gives it: the feature bit alone decides the kernel.
    public static func decide(leFeatures: [UInt8]?, maximumDataLength: Int?) -> HCIAdvertisingMode {
        guard let f = leFeatures, supportsExtended(leFeatures: f) else { return .legacy }
        let max = maximumDataLength ?? AdvertisingData.legacyMaximumLength
        guard max >= AdvertisingData.legacyMaximumLength else { return .legacy }
        return .extended(maximumDataLength: Swift.min(max, extendedDataPerCommand))
    }

    /// Whether the LE features announce LE Extended Advertising.
    public static func supportsExtended(leFeatures: [UInt8]) -> Bool {
        leFeatures.count >= 2 && leFeatures[1] & (1 << (extendedAdvertisingFeatureBit - 8)) != 0
    }

    public var isExtended: Bool { if case .extended = self { true } else { false } }

    /// What a broadcaster in this mode can send: manufacturer data without Flags, so 31 − 4 = 27
    /// bytes in legacy mode, and in extended mode the set's data length − 4, at most what one report
    /// carries (``BroadcastCapabilities/singleReportData`` − 4 = 225), so that voters behind BlueZ hear
    /// every frame (our own scanner joins the pieces of longer ones). A set of 31 octets sends
    /// legacy PDUs, which every scanner hears.
    ///
    /// Frame time: the host rotates the frames, one every interval + ``HCICentral/rotationSlack``
    /// (CentralBroadcast.swift). In legacy mode (a controller without LE Extended Advertising, so
    /// before Bluetooth 5) at least 100 ms + the slack: such a controller may refuse non-connectable
    /// intervals under 100 ms, and then advertises at 100 ms.
    public var broadcastCapabilities: BroadcastCapabilities {
        switch self {
        case .extended(let max) where max > AdvertisingData.legacyMaximumLength:
            BroadcastCapabilities(maxFrameLength: Swift.min(max, BroadcastCapabilities.singleReportData) - 4, extended: true)
                .withFrameTime(slack: HCICentral.rotationSlack)
        case .extended: BroadcastCapabilities.legacy.withFrameTime(slack: HCICentral.rotationSlack)
        case .legacy:
            BroadcastCapabilities.legacy.withFrameTime(slack: HCICentral.rotationSlack,
                                                       minimum: .milliseconds(100) + HCICentral.rotationSlack)
        }
    }
}

/// Advertising_Event_Properties of LE Set Extended Advertising Parameters (bit field).
public enum ExtendedAdvertisingProperties {
    /// Extended, neither connectable nor scannable, undirected: AUX_ADV_IND on a secondary channel.
    public static let extendedNonConnectableNonScannable: UInt16 = 0x0000
    /// Legacy PDUs through the extended commands (bit 4), ADV_NONCONN_IND.
    public static let legacyNonConnectable: UInt16 = 0x0010
    /// Legacy PDUs, ADV_SCAN_IND (scannable, bit 1).
    public static let legacyScannable: UInt16 = 0x0012
}

/// Parameters of HCI_LE_Set_Extended_Advertising_Parameters [v1] (25 octets).
public struct ExtendedAdvertisingParameters: Sendable, Hashable {
    public var handle: UInt8
    public var properties: UInt16
    /// Primary advertising interval in 0.625 ms slots (this backend keeps to 0x0020–0x4000).
    public var intervalMin: UInt16
    public var intervalMax: UInt16
    public var channelMap: UInt8
    public var ownAddressType: OwnAddressType
    /// 0x01 LE 1M. The secondary PHY matters only for extended PDUs.
    public var primaryPHY: UInt8
    public var secondaryPHY: UInt8
    public var sid: UInt8

    public init(handle: UInt8 = 0, properties: UInt16, intervalMin: UInt16, intervalMax: UInt16, channelMap: UInt8 = 0x07,
                ownAddressType: OwnAddressType = .publicAddress, primaryPHY: UInt8 = 0x01, secondaryPHY: UInt8 = 0x01,
                sid: UInt8 = 0) {
        self.handle = handle
        self.properties = properties
        self.intervalMin = intervalMin
        self.intervalMax = intervalMax
        self.channelMap = channelMap
        self.ownAddressType = ownAddressType
        self.primaryPHY = primaryPHY
        self.secondaryPHY = secondaryPHY
        self.sid = sid
    }
}

extension HCICommand {
    /// HCI_LE_Read_Local_Supported_Features: no parameters; returns 8 octets of LE features.
    public static let leReadLocalSupportedFeatures = HCICommand(opcode: .leReadLocalSupportedFeatures)
    /// HCI_LE_Read_Maximum_Advertising_Data_Length: no parameters; returns 2 octets.
    public static let leReadMaximumAdvertisingDataLength = HCICommand(opcode: .leReadMaximumAdvertisingDataLength)

    /// HCI_LE_Set_Advertising_Set_Random_Address: handle, then the address least significant octet first.
    public static func leSetAdvertisingSetRandomAddress(handle: UInt8, _ address: DeviceAddress) -> HCICommand {
        HCICommand(opcode: .leSetAdvertisingSetRandomAddress, parameters: [handle] + addressLE(address))
    }

    /// HCI_LE_Set_Extended_Advertising_Parameters [v1]. Throws for values the specification forbids.
    /// Undirected (peer address zero), no filter, no TX power preference (0x7F), no secondary skip,
    /// no scan request notifications.
    public static func leSetExtendedAdvertisingParameters(_ p: ExtendedAdvertisingParameters) throws(HCIError) -> HCICommand {
        guard HCITimeSlots.advertisingIntervalRange.contains(p.intervalMin),
              HCITimeSlots.advertisingIntervalRange.contains(p.intervalMax), p.intervalMin <= p.intervalMax
        else { throw .invalidParameter("advertising interval \(p.intervalMin)…\(p.intervalMax) slots (0x0020–0x4000, min ≤ max)") }
        guard p.channelMap & 0x07 != 0, p.channelMap & ~0x07 == 0
        else { throw .invalidParameter("advertising channel map 0x\(hex8(p.channelMap))") }
        guard p.handle <= 0xEF else { throw .invalidParameter("advertising handle \(p.handle)") }
        guard p.sid <= 0x0F else { throw .invalidParameter("advertising SID \(p.sid)") }
        var b: [UInt8] = [p.handle]
        b += le16(p.properties)
        b += le16(p.intervalMin) + [0x00]   // 3-octet intervals
        b += le16(p.intervalMax) + [0x00]
        b.append(p.channelMap)
        b.append(p.ownAddressType.rawValue)
        b.append(0x00)                              // Peer_Address_Type
        b.append(contentsOf: [0, 0, 0, 0, 0, 0])    // Peer_Address
        b.append(0x00)                              // Advertising_Filter_Policy
        b.append(0x7F)                              // Advertising_TX_Power: no preference
        b.append(p.primaryPHY)
        b.append(0x00)                              // Secondary_Advertising_Max_Skip
        b.append(p.secondaryPHY)
        b.append(p.sid)
        b.append(0x00)                              // Scan_Request_Notification_Enable
        return HCICommand(opcode: .leSetExtendedAdvertisingParameters, parameters: b)
    }

    /// HCI_LE_Set_Extended_Advertising_Data with Operation 0x03 (complete data, allowed while the set
    /// is enabled) and Fragment_Preference 0x01 (the controller should not fragment). At most 251 octets.
    public static func leSetExtendedAdvertisingData(handle: UInt8, _ data: [UInt8]) throws(HCIError) -> HCICommand {
        guard data.count <= HCIAdvertisingMode.extendedDataPerCommand else {
            throw .advertisingDataTooLong(bytes: data.count, maximum: HCIAdvertisingMode.extendedDataPerCommand)
        }
        return HCICommand(opcode: .leSetExtendedAdvertisingData,
                          parameters: [handle, 0x03, 0x01, UInt8(data.count)] + data)
    }

    /// HCI_LE_Set_Extended_Advertising_Enable for one set, no duration, no event limit; disabling with
    /// `handle` nil disables every set (Num_Sets 0).
    public static func leSetExtendedAdvertisingEnable(_ enable: Bool, handle: UInt8?) -> HCICommand {
        guard let handle else { return HCICommand(opcode: .leSetExtendedAdvertisingEnable, parameters: [enable ? 1 : 0, 0]) }
        return HCICommand(opcode: .leSetExtendedAdvertisingEnable,
                          parameters: [enable ? 1 : 0, 1, handle, 0x00, 0x00, 0x00])
    }

    /// HCI_LE_Set_Extended_Scan_Parameters on the LE 1M PHY only (Scanning_PHYs 0x01: primary
    /// advertising channels are always 1M; a report's secondary channel is followed whatever its PHY).
    public static func leSetExtendedScanParameters(_ p: ScanParameters) throws(HCIError) -> HCICommand {
        guard HCITimeSlots.scanIntervalRange.contains(p.interval), HCITimeSlots.scanIntervalRange.contains(p.window),
              p.window <= p.interval
        else { throw .invalidParameter("scan interval \(p.interval) / window \(p.window) slots (0x0004–0x4000, window ≤ interval)") }
        guard p.filterPolicy <= 0x03 else { throw .invalidParameter("scan filter policy \(p.filterPolicy)") }
        var b: [UInt8] = [p.ownAddressType.rawValue, p.filterPolicy, 0x01, p.active ? 0x01 : 0x00]
        b += le16(p.interval) + le16(p.window)
        return HCICommand(opcode: .leSetExtendedScanParameters, parameters: b)
    }

    /// HCI_LE_Set_Extended_Scan_Enable: enable, filter duplicates, no duration, no period.
    public static func leSetExtendedScanEnable(_ enable: Bool, filterDuplicates: Bool) -> HCICommand {
        HCICommand(opcode: .leSetExtendedScanEnable, parameters: [enable ? 1 : 0, filterDuplicates ? 1 : 0, 0, 0, 0, 0])
    }

    /// Scan Enable in `mode`'s command family.
    static func scanEnable(_ enable: Bool, filterDuplicates: Bool, mode: HCIAdvertisingMode) -> HCICommand {
        mode.isExtended ? .leSetExtendedScanEnable(enable, filterDuplicates: filterDuplicates)
            : .leSetScanEnable(enable, filterDuplicates: filterDuplicates)
    }

    /// Scan parameters in `mode`'s command family.
    static func scanParameters(_ p: ScanParameters, mode: HCIAdvertisingMode) throws(HCIError) -> HCICommand {
        try mode.isExtended ? .leSetExtendedScanParameters(p) : .leSetScanParameters(p)
    }
}

/// Reads the LE features (and, when they announce extended advertising, the maximum advertising data
/// length) and decides the controller's mode. A controller that refuses either read gets legacy
/// commands, which every LE controller takes.
func decideAdvertisingMode(_ controller: HCIController, timeout: Duration) async -> HCIAdvertisingMode {
    guard let features = try? await controller.executeNow(.leReadLocalSupportedFeatures, timeout: timeout),
          HCIAdvertisingMode.supportsExtended(leFeatures: features)
    else { return .legacy }
    let length = try? await controller.executeNow(.leReadMaximumAdvertisingDataLength, timeout: timeout)
    return HCIAdvertisingMode.decide(leFeatures: features,
                                     maximumDataLength: length.flatMap { $0.count >= 2 ? Int($0[0]) | Int($0[1]) << 8 : nil })
}
