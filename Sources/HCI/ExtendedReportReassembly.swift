import ClickerTransport

/// Joins the pieces of extended advertising data that a controller reports in several LE Extended
/// Advertising Reports (each at most 229 octets: a 251-octet beacon frame arrives as 229 + 22).
///
/// A chain is keyed by advertiser (address type, address) and advertising SID: its reports carry data
/// status "incomplete, more to come" (01) and the last one "complete" (00); "incomplete, truncated"
/// (10) ends it unfinished. Other advertisers' reports may come in between. Bounded: at most
/// `maximumChains` chains open (the oldest is dropped for a new one) and `maximumLength` octets each
/// (the most extended advertising data there is, 1650); whatever goes past a bound is dropped and
/// counted by the caller. Pure value, owned by the reader thread.
public struct ExtendedReportReassembler: Sendable {
    public static let maximumLength = 1650
    public static let maximumChains = 16

    struct Key: Hashable, Sendable {
        var addressType: UInt8
        var address: UInt64
        var sid: UInt8
    }

    private var chains: [Key: [UInt8]] = [:]
    private var order: [Key] = []

    public init() {}

    /// Chains open now.
    public var openChains: Int { chains.count }

    /// Adds a "more to come" piece. Returns false when the chain went past `maximumLength` (then it is dropped).
    mutating func append(_ key: Key, _ piece: UnsafeBufferPointer<UInt8>) -> Bool {
        if chains[key] == nil {
            if chains.count >= Self.maximumChains, let oldest = order.first { drop(oldest) }
            chains[key] = []
            order.append(key)
        }
        guard let count = chains[key]?.count, count + piece.count <= Self.maximumLength else {
            drop(key)
            return false
        }
        chains[key]?.append(contentsOf: piece)
        return true
    }

    /// Ends the chain of `key` with its complete last piece: the whole data, or nil when no chain was open.
    mutating func finish(_ key: Key, _ last: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard var whole = chains[key] else { return nil }
        drop(key)
        guard whole.count + last.count <= Self.maximumLength else { return [] }
        whole.append(contentsOf: last)
        return whole
    }

    mutating func drop(_ key: Key) {
        guard chains.removeValue(forKey: key) != nil else { return }
        order.removeAll { $0 == key }
    }
}

extension AdvertisementExtractor {
    /// Like `extract(packet:companyID:timestamp:into:)` for several companies at once, and joining
    /// extended data that arrives in pieces (see `ExtendedReportReassembler`): a piece is counted in
    /// `fragments` and kept; the report that completes a chain is matched on the whole data. A
    /// report is delivered once per wanted company whose manufacturer data it carries.
    public static func extract(packet: [UInt8], companyIDs: [UInt16], timestamp: RadioInstant,
                               reassembler: inout ExtendedReportReassembler,
                               into out: inout [AdvertisementReport]) throws(HCIParseError) -> ExtractionCounts {
        try HCIEvent.validateAdvertisingReports(packet)
        return packet.withUnsafeBufferPointer { p in
            var counts = ExtractionCounts()
            let extended = p[3] == HCIEvent.subeventExtendedAdvertisingReport
            let count = Int(p[4])
            var i = 5
            for _ in 0..<count {
                let addressAt: Int, dataAt: Int, length: Int, rssi: Int8, next: Int
                var joined: [UInt8]?
                if extended {
                    length = Int(p[i + 23])
                    addressAt = i + 3
                    dataAt = i + 24
                    rssi = Int8(bitPattern: p[i + 13])
                    next = dataAt + length
                    var raw: UInt64 = 0
                    for k in 0..<6 { raw |= UInt64(p[addressAt + k]) << (8 * UInt64(k)) }
                    let key = ExtendedReportReassembler.Key(addressType: p[i + 2], address: raw, sid: p[i + 11])
                    let piece = UnsafeBufferPointer(rebasing: p[dataAt..<next])
                    switch (p[i] >> 5) & 0x03 {
                    case 0:
                        joined = reassembler.finish(key, piece)
                    case 1:
                        if !reassembler.append(key, piece) { counts.malformed += 1 }
                        counts.fragments += 1
                        i = next
                        continue
                    default:   // truncated, or reserved: the chain ends unfinished
                        reassembler.drop(key)
                        counts.fragments += 1
                        i = next
                        continue
                    }
                } else {
                    length = Int(p[i + 8])
                    addressAt = i + 2
                    dataAt = i + 9
                    rssi = Int8(bitPattern: p[dataAt + length])
                    next = dataAt + length + 1
                }
                let a = addressAt
                let address = DeviceAddress(p[a + 5], p[a + 4], p[a + 3], p[a + 2], p[a + 1], p[a])
                var matched = false, malformed = false
                for company in companyIDs {
                    let found: [UInt8]?
                    if let joined {
                        found = joined.withUnsafeBufferPointer { j -> [UInt8]? in
                            switch findManufacturerData(j, from: 0, to: j.count, companyID: company) {
                            case .found(let s, let e): return Array(UnsafeBufferPointer(rebasing: j[s..<e]))
                            case .absent: return nil
                            case .malformed: malformed = true; return nil
                            }
                        }
                    } else {
                        switch findManufacturerData(p, from: dataAt, to: dataAt + length, companyID: company) {
                        case .found(let s, let e): found = Array(UnsafeBufferPointer(rebasing: p[s..<e]))
                        case .absent: found = nil
                        case .malformed: malformed = true; found = nil
                        }
                    }
                    if let found {
                        matched = true
                        out.append(AdvertisementReport(address: address, rssi: rssi == 127 ? nil : rssi,
                                                       companyID: company, data: found, timestamp: timestamp))
                    }
                }
                if matched { counts.matched += 1 } else if malformed { counts.malformed += 1 } else { counts.ignored += 1 }
                i = next
            }
            return counts
        }
    }
}
