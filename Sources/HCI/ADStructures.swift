// Advertising Data (AD) structures (Core Specification Supplement Part A; Core Vol 3 Part C §11):
// a sequence of [length][AD type][length-1 octets], where a zero length ends the significant part.
// Pure: no I/O.

/// One AD structure: its type and its data (a slice of the advertisement, no copy).
public struct ADStructure: Sendable, Hashable {
    public var type: UInt8
    public var data: ArraySlice<UInt8>

    public init(type: UInt8, data: ArraySlice<UInt8>) {
        self.type = type
        self.data = data
    }
}

/// Building and walking advertising data.
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

    /// All AD structures of `data`, stopping at the first zero length octet (padding).
    /// Throws when a structure's length runs past the end.
    public static func structures(_ data: ArraySlice<UInt8>) throws(HCIParseError) -> [ADStructure] {
        var out: [ADStructure] = []
        try walk(data) { s in out.append(s); return false }
        return out
    }

    /// The manufacturer data after the company identifier of the first Manufacturer Specific
    /// Data structure whose company is `companyID`, or nil when there is none.
    /// Throws when the AD structures are malformed (up to the point where the match was found).
    @inlinable
    public static func manufacturerData(_ data: ArraySlice<UInt8>, companyID: UInt16) throws(HCIParseError) -> ArraySlice<UInt8>? {
        var i = data.startIndex
        let end = data.endIndex
        while i < end {
            let length = Int(data[i])
            if length == 0 { return nil }            // padding: the significant part is over
            let next = i + 1 + length
            guard next <= end else { throw .malformedADStructure(offset: i - data.startIndex) }
            if data[i + 1] == typeManufacturerSpecific && length >= 3
                && UInt16(data[i + 2]) | UInt16(data[i + 3]) << 8 == companyID {
                return data[(i + 4)..<next]
            }
            i = next
        }
        return nil
    }

    /// Calls `body` for each structure until it returns true.
    static func walk(_ data: ArraySlice<UInt8>, _ body: (ADStructure) -> Bool) throws(HCIParseError) {
        var i = data.startIndex
        let end = data.endIndex
        while i < end {
            let length = Int(data[i])
            if length == 0 { return }
            let next = i + 1 + length
            guard next <= end else { throw .malformedADStructure(offset: i - data.startIndex) }
            if body(ADStructure(type: data[i + 1], data: data[(i + 2)..<next])) { return }
            i = next
        }
    }
}
