import ClickerTransport

/// Counts of one advertising-report event's reports, by what became of them.
public struct ExtractionCounts: Sendable, Hashable {
    /// Reports delivered (Manufacturer Specific Data with the wanted company ID).
    public var matched = 0
    /// Reports from other devices or without the wanted company ID.
    public var ignored = 0
    /// Reports whose AD structures are malformed.
    public var malformed = 0
    /// Extended reports that were pieces of a longer advertisement (incomplete or truncated data): kept
    /// until the piece that completes them (see `ExtendedReportReassembler`), not delivered themselves.
    public var fragments = 0
    public init() {}
}

/// The hot path of the HCI central: advertising-report events to `AdvertisementReport`s.
public enum AdvertisementExtractor {
    /// Appends to `out` one `AdvertisementReport` per report of the LE (Extended) Advertising Report
    /// event `packet` and per company of `companyIDs` whose Manufacturer Specific Data it carries.
    /// Extended data that arrives in pieces is joined (see `ExtendedReportReassembler`): a piece is
    /// counted in `fragments` and kept, and the report that completes a chain is matched on the whole
    /// data. A structurally malformed event throws and appends nothing; a report whose AD structures
    /// are malformed is counted and skipped. Each report is counted once, in one of `counts`' fields.
    ///
    /// The same decoding as `HCIEvent.parse` + `AdvertisingData.manufacturerData`, without building the
    /// intermediate values: after `validateAdvertisingReports` has checked every length, the walk reads
    /// the packet through an unsafe buffer, all of whose indices are proven in bounds.
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
                        if reassembler.append(key, piece) { counts.fragments += 1 } else { counts.malformed += 1 }
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

    enum Search { case found(Int, Int), absent, malformed }

    /// `AdvertisingData.manufacturerData` over `p[from..<to]` (which the caller has bounds-checked).
    @inline(__always)
    static func findManufacturerData(_ p: UnsafeBufferPointer<UInt8>, from: Int, to end: Int, companyID: UInt16) -> Search {
        var i = from
        while i < end {
            let length = Int(p[i])
            if length == 0 { return .absent }
            let next = i + 1 + length
            guard next <= end else { return .malformed }
            if length >= 3 && p[i + 1] == AdvertisingData.typeManufacturerSpecific
                && UInt16(p[i + 2]) | UInt16(p[i + 3]) << 8 == companyID {
                return .found(i + 4, next)
            }
            i = next
        }
        return .absent
    }
}
