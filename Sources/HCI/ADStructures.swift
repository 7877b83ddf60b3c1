// Advertising Data (AD) structures (Core Specification Supplement Part A; Core Vol 3 Part C §11):
// a sequence of [length][AD type][length-1 octets], where a zero length ends the significant part.
// Pure: no I/O.

/// Building advertising data. The receiving side walks it in `AdvertisementExtractor` (HCIEvents.swift).
public enum AdvertisingData {
    /// Legacy advertising data is at most 31 octets.
    public static let legacyMaximumLength = 31
    /// AD type «Flags».
    public static let typeFlags: UInt8 = 0x01
    /// AD type «Manufacturer Specific Data».
    public static let typeManufacturerSpecific: UInt8 = 0xFF
    /// Flags value: LE General Discoverable Mode, BR/EDR Not Supported.
    public static let flagsGeneralDiscoverableLEOnly: UInt8 = 0x06
    /// Most manufacturer payload octets that fit beside the Flags structure in legacy advertising data:
    /// 31 − 3 (Flags) − 2 (length, type) − 2 (company ID) = 24.
    public static let maximumManufacturerPayload = legacyMaximumLength - 3 - 4

    /// Flags + Manufacturer Specific Data (company ID little-endian, then `payload`).
    /// Throws `HCIError.advertisingDataTooLong` when the result would exceed 31 octets.
    public static func build(flags: UInt8 = flagsGeneralDiscoverableLEOnly, companyID: UInt16,
                             payload: [UInt8]) throws(HCIError) -> [UInt8] {
        guard payload.count <= maximumManufacturerPayload else {
            throw .advertisingDataTooLong(bytes: 7 + payload.count, maximum: legacyMaximumLength)
        }
        var out: [UInt8] = [0x02, typeFlags, flags, UInt8(3 + payload.count), typeManufacturerSpecific]
        out += le16(companyID)
        out += payload
        return out
    }
}
