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
