/// Finding our payload in manufacturer data as the radios deliver it. All functions are total:
/// any input gives a value or a typed error.
public enum ManufacturerData {
    /// Picks the ballot payload out of company-ID → bytes pairs (BlueZ's `ManufacturerData`
    /// property, raw HCI reports). Exactly one entry must have ``BallotFormat/companyID``, else
    /// `notOurs` (none) or `trailingBytes` (several, ambiguous). Other companies' entries are ignored.
    public static func ballotPayload(from entries: some Sequence<(companyID: UInt16, data: [UInt8])>) -> Result<[UInt8], Rejection> {
        var found: [UInt8]?
        for e in entries where e.companyID == BallotFormat.companyID {
            guard found == nil else { return .failure(.trailingBytes) }
            found = e.data
        }
        guard let found else { return .failure(.notOurs) }
        return .success(found)
    }

    /// Same, from a dictionary.
    public static func ballotPayload(from dictionary: [UInt16: [UInt8]]) -> Result<[UInt8], Rejection> {
        guard let d = dictionary[BallotFormat.companyID] else { return .failure(.notOurs) }
        return .success(d)
    }

    /// Why raw bytes could not be read as manufacturer data.
    public enum FormatError: Error, Sendable, Equatable {
        /// The bytes end inside a structure (at this offset).
        case truncated(at: Int)
        /// A D-Bus variant whose signature is not `ay` (at this offset).
        case unexpectedSignature(at: Int)
        /// A length or padding that D-Bus forbids (at this offset).
        case malformed(at: Int)
    }

    /// The manufacturer-specific entries (AD type 0xFF) of raw advertising data, as an HCI LE
    /// advertising report carries it: `len type data…` structures; the company ID is little-endian.
    /// A zero length ends the data (the rest is padding), as the Core specification says.
    public static func entries(advertisingData ad: [UInt8]) -> Result<[(companyID: UInt16, data: [UInt8])], FormatError> {
        var out: [(companyID: UInt16, data: [UInt8])] = []
        var i = 0
        while i < ad.count {
            let len = Int(ad[i])
            if len == 0 { break }
            guard i + 1 + len <= ad.count else { return .failure(.truncated(at: i)) }
            if ad[i + 1] == 0xFF {
                guard len >= 3 else { return .failure(.malformed(at: i)) }
                let company = UInt16(ad[i + 2]) | UInt16(ad[i + 3]) << 8
                out.append((company, Array(ad[(i + 4)..<(i + 1 + len)])))
            }
            i += 1 + len
        }
        return .success(out)
    }

    /// Legacy advertising data for a ballot payload: Flags (LE General Discoverable, BR/EDR not
    /// supported) and one manufacturer-specific structure with ``BallotFormat/companyID``. 29 bytes
    /// for a 22-byte payload; nil if it would not fit in 31.
    public static func advertisingData(payload: [UInt8]) -> [UInt8]? {
        guard payload.count <= 31 - 3 - 4 else { return nil }
        let c = BallotFormat.companyID
        return [0x02, 0x01, 0x06, UInt8(payload.count + 3), 0xFF, UInt8(c & 0xFF), UInt8(c >> 8)] + payload
    }

    /// Decodes the D-Bus marshalling of an `a{qv}` value whose variants hold `ay` (BlueZ's
    /// `ManufacturerData`), starting at an 8-aligned offset of the message body.
    /// `bigEndian` is the message's byte order (`B` flag). Entries with other variant types
    /// are an error, since BlueZ never sends them.
    public static func entries(dbusMarshalled b: [UInt8], bigEndian: Bool = false) -> Result<[(companyID: UInt16, data: [UInt8])], FormatError> {
        var r = DBusReader(bytes: b, bigEndian: bigEndian)
        return r.readManufacturerData()
    }
}

/// A minimal reader for the D-Bus wire format, just enough for `a{qv}` with `ay` variants.
struct DBusReader {
    let bytes: [UInt8]
    let bigEndian: Bool
    var pos = 0

    init(bytes: [UInt8], bigEndian: Bool) {
        self.bytes = bytes
        self.bigEndian = bigEndian
    }

    mutating func align(_ n: Int) -> Result<Void, ManufacturerData.FormatError> {
        let target = (pos + n - 1) / n * n
        guard target <= bytes.count else { return .failure(.truncated(at: pos)) }
        for i in pos..<target where bytes[i] != 0 { return .failure(.malformed(at: i)) }
        pos = target
        return .success(())
    }

    mutating func u8() -> Result<UInt8, ManufacturerData.FormatError> {
        guard pos < bytes.count else { return .failure(.truncated(at: pos)) }
        defer { pos += 1 }
        return .success(bytes[pos])
    }

    mutating func u16() -> Result<UInt16, ManufacturerData.FormatError> {
        if case .failure(let e) = align(2) { return .failure(e) }
        guard pos + 2 <= bytes.count else { return .failure(.truncated(at: pos)) }
        let a = UInt16(bytes[pos]), b = UInt16(bytes[pos + 1])
        pos += 2
        return .success(bigEndian ? a << 8 | b : b << 8 | a)
    }

    mutating func u32() -> Result<UInt32, ManufacturerData.FormatError> {
        if case .failure(let e) = align(4) { return .failure(e) }
        guard pos + 4 <= bytes.count else { return .failure(.truncated(at: pos)) }
        var v: UInt32 = 0
        for i in 0..<4 {
            let byte = UInt32(bytes[pos + (bigEndian ? i : 3 - i)])
            v = v << 8 | byte
        }
        pos += 4
        return .success(v)
    }

    mutating func readManufacturerData() -> Result<[(companyID: UInt16, data: [UInt8])], ManufacturerData.FormatError> {
        let start = pos
        let length: UInt32
        switch u32() {
        case .success(let v): length = v
        case .failure(let e): return .failure(e)
        }
        // D-Bus caps arrays at 64 MiB.
        guard length <= 1 << 26 else { return .failure(.malformed(at: start)) }
        // Dict entries are 8-aligned; the padding before the first is not part of the length.
        if case .failure(let e) = align(8) { return .failure(e) }
        let end = pos + Int(length)
        guard end <= bytes.count else { return .failure(.truncated(at: pos)) }
        var out: [(companyID: UInt16, data: [UInt8])] = []
        while pos < end {
            if case .failure(let e) = align(8) { return .failure(e) }
            let company: UInt16
            switch u16() {
            case .success(let v): company = v
            case .failure(let e): return .failure(e)
            }
            // Variant: signature (length byte, characters, NUL), then the value.
            let sigAt = pos
            guard case .success(let sigLen) = u8() else { return .failure(.truncated(at: sigAt)) }
            guard sigLen == 2, pos + 3 <= bytes.count, bytes[pos] == UInt8(ascii: "a"), bytes[pos + 1] == UInt8(ascii: "y"),
                  bytes[pos + 2] == 0
            else { return .failure(pos + 3 > bytes.count ? .truncated(at: sigAt) : .unexpectedSignature(at: sigAt)) }
            pos += 3
            let n: UInt32
            switch u32() {
            case .success(let v): n = v
            case .failure(let e): return .failure(e)
            }
            guard n <= 1 << 26, pos + Int(n) <= end else { return .failure(.truncated(at: pos)) }
            out.append((company, Array(bytes[pos..<(pos + Int(n))])))
            pos += Int(n)
        }
        guard pos == end else { return .failure(.malformed(at: pos)) }
        return .success(out)
    }
}
