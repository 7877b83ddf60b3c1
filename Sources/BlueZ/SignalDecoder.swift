import ClickerTransport
import DBus

/// One advertisement as seen in a Device1 property change (or a new device).
struct Advert: Sendable {
    var address: DeviceAddress
    var rssi: Int16?
    /// The first manufacturer data entry, if the signal carried one.
    var company: UInt16 = 0
    var data: [UInt8]? = nil
    /// Further manufacturer entries (rare: BlueZ clears them per advertisement with DuplicateData).
    var more: [(UInt16, [UInt8])]? = nil
    var timestamp: RadioInstant

    mutating func addManufacturer(_ company: UInt16, _ bytes: [UInt8]) {
        if data == nil {
            self.company = company
            data = bytes
        } else {
            more = (more ?? []) + [(company, bytes)]
        }
    }

    /// The bytes for `company`, if present.
    func manufacturerData(_ wanted: UInt16) -> [UInt8]? {
        if let d = data, company == wanted { return d }
        return more?.first { $0.0 == wanted }?.1
    }
}

/// A signal from org.bluez, decoded on the bus's dispatch thread.
enum BlueZSignal: Sendable {
    /// A Device1 PropertiesChanged carrying nothing but ManufacturerData and/or RSSI (the hot path).
    case advert(Advert)
    /// Any other PropertiesChanged (with the advertisement part extracted when it is a device's).
    case propertiesChanged(DBusObjectPath, String, [String: DBusValue], [String], Advert?)
    case interfacesAdded(DBusObjectPath, [String: [String: DBusValue]], Advert?)
    case interfacesRemoved(DBusObjectPath, [String])
}

enum SignalDecoder {
    /// Decodes one signal from org.bluez; nil for signals the central does not use.
    /// Runs on the dispatch thread for every signal: the common case (a device's advertisement)
    /// reads the message in place and allocates only the report's data.
    static func decode(_ msg: DBusMessage, _ r: inout DBusMessageReader, clock: RadioClock) throws -> BlueZSignal? {
        // Classify by the first argument's type, without building the member name on the hot path:
        // PropertiesChanged starts with a string, InterfacesAdded/Removed with an object path.
        switch r.currentType {
        case .string?:
            guard msg.hasSignature("sa{sv}as") else { return nil }  // PropertiesChanged (a short, inline string)
            let isDevice = try r.readStringEquals("org.bluez.Device1")
            if isDevice, let fast = try fastDeviceChange(msg, &r, at: clock.now) { return .advert(fast) }
            var full = msg.reader()
            let interface = try full.readString()
            let changed = try [String: DBusValue](from: &full)
            let invalidated = full.isAtEnd ? [] : try [String](from: &full)
            guard let path = msg.path else { return nil }
            var advert: Advert? = nil
            if interface == BlueZ.device { advert = advertFrom(path: path, properties: changed, at: clock.now) }
            return .propertiesChanged(path, interface, changed, invalidated, advert)
        case .objectPath?:
            switch msg.member {
            case "InterfacesAdded":
                let path = try r.readObjectPath()
                let interfaces = try [String: [String: DBusValue]](from: &r)
                var advert: Advert? = nil
                if let dev = interfaces[BlueZ.device] { advert = advertFrom(path: path, properties: dev, at: clock.now) }
                return .interfacesAdded(path, interfaces, advert)
            case "InterfacesRemoved":
                let path = try r.readObjectPath()
                let names = try [String](from: &r)
                return .interfacesRemoved(path, names)
            default:
                return nil
            }
        default:
            return nil
        }
    }

    /// The hot path: `{ManufacturerData: a{qv}, RSSI: n}` and nothing else. Returns nil when the change
    /// has other properties too (the caller then decodes it fully), or the path is not a device path.
    static func fastDeviceChange(_ msg: DBusMessage, _ r: inout DBusMessageReader, at now: RadioInstant) throws -> Advert? {
        guard let address = msg.withPathBytes({ DevicePath.address(ofBytes: $0) }) else { return nil }
        var advert = Advert(address: address, rssi: nil, timestamp: now)
        var other = false
        try r.forEachDictEntry { e in
            if other {
                return
            }
            let key = try e.withStringBytes { buf -> UInt8 in
                if equals(buf, "ManufacturerData") { return 1 }
                if equals(buf, "RSSI") { return 2 }
                return 0
            }
            switch key {
            case 1:
                var v = try e.enterVariant()
                guard v.currentType == .array else { other = true; return }
                try readManufacturerData(&v, into: &advert)
            case 2:
                var v = try e.enterVariant()
                guard v.currentType == .int16 else { other = true; return }
                advert.rssi = try v.readInt16()
            default:
                other = true
            }
        }
        if other { return nil }
        return advert
    }

    /// Reads an `a{qv}` whose values are `ay`, skipping entries of any other shape.
    static func readManufacturerData(_ r: inout DBusMessageReader, into advert: inout Advert) throws {
        do {
            try r.forEachDictEntry { e in
                let company = try e.readUInt16()
                var v = try e.enterVariant()
                if let bytes = try? v.readBytes() { advert.addManufacturer(company, bytes) }
            }
        } catch is DBusDecodingError {
            // Not an a{q…}: not manufacturer data as BlueZ sends it; ignore it.
        }
    }

    /// The advertisement part of a decoded Device1 property set (InterfacesAdded, a mixed change).
    static func advertFrom(path: DBusObjectPath, properties: [String: DBusValue], at now: RadioInstant) -> Advert? {
        guard let address = DevicePath.address(of: path.rawValue) else { return nil }
        var advert = Advert(address: address, rssi: nil, timestamp: now)
        var any = false
        if case .int16(let rssi)? = properties["RSSI"]?.unwrapped {
            advert.rssi = rssi
            any = true
        }
        if case .dictionary(_, _, let entries)? = properties["ManufacturerData"]?.unwrapped {
            for entry in entries {
                guard case .uint16(let company) = entry.key.unwrapped else { continue }
                switch entry.value.unwrapped {
                case .bytes(let b): advert.addManufacturer(company, b)
                case .array(_, let items):
                    let bytes = items.compactMap { v -> UInt8? in if case .byte(let b) = v { return b } else { return nil } }
                    if bytes.count == items.count { advert.addManufacturer(company, bytes) }
                default: continue
                }
                any = true
            }
        }
        return any ? advert : nil
    }

    @inline(__always)
    static func equals(_ buf: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard buf.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0..<buf.count where buf[i] != p[i] { return false }
        return true
    }
}
