// libFuzzer target: what the radios hand the tally, through the production decoders. Compiled
// together with the BlueZ sources (see run.sh), against instrumented DBus and HCI modules.
// The first byte picks the decoder, the rest is its input:
//   even: HCI event packets, one after another (each as long as its header says; the last takes
//         what is left) → `AdvertisementExtractor.extract` with one `ExtendedReportReassembler`
//         for all of them (the HCI central's hot path);
//   odd:  a D-Bus message in wire format → `DBusWireMessage` (the signal reader's header parsing)
//         → `SignalDecoder.decode` (the BlueZ central's decoder, on our own unmarshalling).
// Properties: nothing traps; the extractor agrees with `HCIEvent.parse`, an independent walk of the
// AD structures and an independent model of the chains of extended pieces; a rejected event
// delivers nothing; the BlueZ hot path reads the same ballot
// bytes and RSSI as the generic decoding of the same signal, whenever the generic decoding reads it.

import CDBus
import ClickerTransport
@testable import DBus
import HCI

let fuzzCompany: UInt16 = 0xFFFF
/// The clock the BlueZ decoder stamps reports with.
let fuzzClock = RadioClock()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRadioInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 == 0 { checkHCI(bytes) } else { checkDBus(bytes) }
    return 0
}

// MARK: HCI

/// The first Manufacturer Specific Data for `company` in `d`: [len][type][data…], a zero length
/// ends the data, a structure running past the end makes the report malformed.
enum Walk: Equatable { case found([UInt8]), absent, malformed }

func referenceWalk(_ d: ArraySlice<UInt8>) -> Walk {
    let d = Array(d)
    var i = 0
    while i < d.count {
        let len = Int(d[i])
        if len == 0 { return .absent }
        if i + 1 + len > d.count { return .malformed }
        if d[i + 1] == 0xFF && len >= 3 && UInt16(d[i + 2]) | UInt16(d[i + 3]) << 8 == fuzzCompany {
            return .found(Array(d[(i + 4)..<(i + 1 + len)]))
        }
        i += 1 + len
    }
    return .absent
}

/// The chains of extended pieces as the reassembler keeps them (written from its documentation): keyed
/// by address type, address and SID; at most 16 open (a new one drops the oldest) and 1650 octets each.
struct ChainModel {
    var chains: [String: [UInt8]] = [:]
    var order: [String] = []

    mutating func drop(_ key: String) {
        if chains.removeValue(forKey: key) != nil { order.removeAll { $0 == key } }
    }

    /// A "more to come" piece: false when the chain went past 1650 octets (it is dropped).
    mutating func append(_ key: String, _ piece: [UInt8]) -> Bool {
        if chains[key] == nil {
            if chains.count >= 16, let oldest = order.first { drop(oldest) }
            chains[key] = []
            order.append(key)
        }
        let joined = (chains[key] ?? []) + piece
        guard joined.count <= 1650 else { drop(key); return false }
        chains[key] = joined
        return true
    }

    /// The complete last piece: the whole data (empty past 1650 octets), or the piece alone.
    mutating func finish(_ key: String, _ last: [UInt8]) -> [UInt8] {
        guard let chain = chains[key] else { return last }
        drop(key)
        return chain.count + last.count <= 1650 ? chain + last : []
    }
}

func checkHCI(_ bytes: [UInt8]) {
    var packets: [[UInt8]] = []
    var at = 0
    while at < bytes.count && packets.count < 8 {
        let end = at + 3 <= bytes.count ? min(bytes.count, at + 3 + Int(bytes[at + 2])) : bytes.count
        packets.append(Array(bytes[at..<end]))
        at = end
    }
    var reassembler = ExtendedReportReassembler()
    var model = ChainModel()
    for packet in packets { checkHCIPacket(packet, &reassembler, &model) }
}

func checkHCIPacket(_ packet: [UInt8], _ reassembler: inout ExtendedReportReassembler, _ model: inout ChainModel) {
    let sentinel = AdvertisementReport(address: DeviceAddress(0, 0, 0, 0, 0, 0), rssi: nil, companyID: 0, data: [], timestamp: .zero)
    var out = [sentinel]
    let counts: ExtractionCounts
    do {
        counts = try AdvertisementExtractor.extract(packet: packet, companyIDs: [fuzzCompany], timestamp: .zero,
                                                    reassembler: &reassembler, into: &out)
    } catch {
        guard out == [sentinel] else { fatalError("a rejected event delivered reports") }
        if case .leAdvertisingReport? = try? HCIEvent.parse(packet: packet) { fatalError("parse accepts what extract rejects") }
        if case .leExtendedAdvertisingReport? = try? HCIEvent.parse(packet: packet) { fatalError("parse accepts what extract rejects") }
        return
    }
    let reports: [LEAdvertisingReport]
    switch try? HCIEvent.parse(packet: packet) {
    case .leAdvertisingReport(let r)?, .leExtendedAdvertisingReport(let r)?: reports = r
    default: fatalError("extract accepts what parse rejects")
    }
    var expected = ExtractionCounts()
    var delivered: [AdvertisementReport] = []
    for r in reports {
        var data = Array(r.data)
        if let sid = r.extended?.advertisingSID {
            let key = "\(r.addressType) \(r.address) \(sid)"
            switch r.dataStatus {
            case .complete: data = model.finish(key, data)
            case .incompleteMoreToCome:
                if model.append(key, data) { expected.fragments += 1 } else { expected.malformed += 1 }
                continue
            case .incompleteTruncated, .reserved:
                model.drop(key)
                expected.fragments += 1
                continue
            }
        }
        switch referenceWalk(data[...]) {
        case .found(let payload):
            expected.matched += 1
            delivered.append(AdvertisementReport(address: r.address, rssi: r.rssi, companyID: fuzzCompany, data: payload, timestamp: .zero))
        case .absent: expected.ignored += 1
        case .malformed: expected.malformed += 1
        }
    }
    guard counts == expected else { fatalError("counts \(counts) but the reports give \(expected)") }
    guard Array(out.dropFirst()) == delivered else { fatalError("delivered reports differ from the parsed ones") }
    guard reassembler.openChains == model.chains.count else { fatalError("\(reassembler.openChains) chains open, the model has \(model.chains.count)") }
}

// MARK: BlueZ over D-Bus

func checkDBus(_ wire: [UInt8]) {
    wire.withUnsafeBytes { bytes in
        // The reader hands the decoder only messages whose header parses (the others are counted).
        guard let message = try? DBusWireMessage(parsing: bytes) else { return }
        let signal: BlueZSignal?
        do {
            signal = try SignalDecoder.decode(message, clock: fuzzClock)
        } catch {
            return   // a counted rejection in the reader
        }
        guard case .advert(let fast)? = signal else { return }
        // The hot path took it: the generic decoding of the same change must read the same ballot.
        guard let path = message.path else { fatalError("an advert from a signal without a path") }
        var full = message.body()
        guard (try? full.readString()) == BlueZ.device else { fatalError("an advert from another interface's change") }
        // The hot path skips manufacturer entries of other shapes (an `ah`, say) where the generic
        // decoding rejects the whole signal; compare when both read it.
        guard let changed = try? full.readPropertyDictionary() else { return }
        let generic = SignalDecoder.advertFrom(path: path, properties: changed, at: fast.timestamp)
        guard generic?.address ?? fast.address == fast.address else { fatalError("addresses differ") }
        guard fast.manufacturerData(fuzzCompany) == generic?.manufacturerData(fuzzCompany) else {
            fatalError("hot path read \(String(describing: fast.manufacturerData(fuzzCompany))), generic \(String(describing: generic?.manufacturerData(fuzzCompany)))")
        }
        if fast.manufacturerData(fuzzCompany) != nil, fast.rssi != generic?.rssi {
            fatalError("hot path RSSI \(String(describing: fast.rssi)), generic \(String(describing: generic?.rssi))")
        }
    }
}
