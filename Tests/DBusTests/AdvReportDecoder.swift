// The fast-path decoder of the receive-cost test, also compiled into tools/dbus-receive-cost
// (there the DBus sources and this file form one module, so DBus is not imported).
#if canImport(DBus)
import DBus
#endif

/// A BlueZ-shaped advertisement report as the central's fast path would extract it.
struct AdvReport: Sendable, Equatable {
    var address: UInt64
    var rssi: Int16
    var company: UInt16
    var payload: (UInt64, UInt64)  // first 16 bytes of manufacturer data
    var length: Int

    static func == (a: AdvReport, b: AdvReport) -> Bool {
        a.address == b.address && a.rssi == b.rssi && a.company == b.company && a.payload == b.payload && a.length == b.length
    }
}

/// Decodes `PropertiesChanged("org.bluez.Device1", {RSSI: n, ManufacturerData: a{qv}}, [])` straight from
/// the message, allocation-free apart from the report itself.
@Sendable func decodeAdvReport(_ msg: DBusMessage, _ r: inout DBusMessageReader) throws -> AdvReport? {
    // Device address from ".../dev_AA_BB_CC_DD_EE_FF".
    let address: UInt64 = msg.withPathBytes { p in
        guard p.count >= 17 else { return 0 }
        var a: UInt64 = 0
        var i = p.count - 17
        while i < p.count {
            let c = p[i]
            if c != UInt8(ascii: "_") {
                let v: UInt8 = c <= 57 ? c &- 48 : (c | 0x20) &- 87
                a = (a << 4) | UInt64(v & 0xF)
            }
            i += 1
        }
        return a
    }
    guard try r.readStringEquals("org.bluez.Device1") else { return nil }
    var rep = AdvReport(address: address, rssi: 0, company: 0, payload: (0, 0), length: 0)
    var any = false
    try r.forEachDictEntry { e in
        let key = try e.withStringBytes { b -> Int in
            if b.count == 4 && b.elementsEqual("RSSI".utf8) { return 1 }
            if b.count == 16 && b.elementsEqual("ManufacturerData".utf8) { return 2 }
            return 0
        }
        switch key {
        case 1:
            var v = try e.enterVariant()
            rep.rssi = try v.readInt16()
        case 2:
            var v = try e.enterVariant()
            try v.forEachDictEntry { m in
                rep.company = try m.readUInt16()
                var inner = try m.enterVariant()
                try inner.withBytes { b in
                    rep.length = b.count
                    var words: (UInt64, UInt64) = (0, 0)
                    withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: b.prefix(16))) }
                    rep.payload = words
                }
                any = true
            }
        default:
            try e.skip()
        }
    }
    return any ? rep : nil
}
