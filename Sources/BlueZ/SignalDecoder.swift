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

/// A signal from org.bluez, decoded on the signal reader's thread.
enum BlueZSignal: Sendable {
    /// A Device1 PropertiesChanged carrying nothing but ManufacturerData and/or RSSI (the hot path).
    case advert(Advert)
    /// Any other PropertiesChanged (with the advertisement part extracted when it is a device's).
    case propertiesChanged(DBusObjectPath, String, [String: DBusValue], [String], Advert?)
    case interfacesAdded(DBusObjectPath, [String: [String: DBusValue]], Advert?)
    case interfacesRemoved(DBusObjectPath, [String])
}

enum SignalDecoder {
    /// Decodes one signal from org.bluez, as read from the bus by our own reader
    /// (``DBusSignalReader``); nil for signals the central does not use. Runs on the reader's thread
    /// for every signal: the common case (a device's advertisement) reads the message in place and
    /// allocates only the report's data.
    static func decode(_ msg: DBusWireMessage, clock: RadioClock) throws -> BlueZSignal? {
        if msg.signatureIs("sa{sv}as") {
            guard msg.memberIs("PropertiesChanged"), msg.interfaceIs("org.freedesktop.DBus.Properties") else { return nil }
            var r = msg.body()
            if try r.readStringEquals("org.bluez.Device1"), let fast = try fastDeviceChange(msg, &r, at: clock.now) {
                return .advert(fast)
            }
            r = msg.body()
            let interface = try r.readString()
            let changed = try r.readPropertyDictionary()
            let invalidated = try r.readStringArray()
            guard let path = msg.path else { return nil }
            var advert: Advert? = nil
            if interface == BlueZ.device { advert = advertFrom(path: path, properties: changed, at: clock.now) }
            return .propertiesChanged(path, interface, changed, invalidated, advert)
        }
        guard msg.interfaceIs("org.freedesktop.DBus.ObjectManager") else { return nil }
        var r = msg.body()
        if msg.signatureIs("oa{sa{sv}}"), msg.memberIs("InterfacesAdded") {
            let path = try r.readObjectPath()
            let interfaces = try r.readInterfaceDictionary()
            var advert: Advert? = nil
            if let dev = interfaces[BlueZ.device] { advert = advertFrom(path: path, properties: dev, at: clock.now) }
            return .interfacesAdded(path, interfaces, advert)
        }
        if msg.signatureIs("oas"), msg.memberIs("InterfacesRemoved") {
            let path = try r.readObjectPath()
            return .interfacesRemoved(path, try r.readStringArray())
        }
        return nil
    }

    /// The hot path: `{ManufacturerData: a{qv}, RSSI: n}` and nothing else. Returns nil when the change
    /// has other properties too (the caller then decodes it fully), or the path is not a device path.
    static func fastDeviceChange(_ msg: DBusWireMessage, _ r: inout DBusWireCursor, at now: RadioInstant) throws -> Advert? {
        guard let address = msg.withPathBytes({ DevicePath.address(ofBytes: $0) }) else { return nil }
        var advert = Advert(address: address, rssi: nil, timestamp: now)
        var changed = try r.enterArray(elementAlignment: 8)
        while !changed.isAtEnd {
            try changed.align(8)
            let key = try changed.readStringBytes()
            let signature = try changed.enterVariant()
            if wireEquals(key, "ManufacturerData"), wireEquals(signature, "a{qv}") {
                try readManufacturerData(&changed, into: &advert)
            } else if wireEquals(key, "RSSI"), wireEquals(signature, "n") {
                advert.rssi = try changed.readInt16()
            } else {
                return nil
            }
            changed.leaveVariant()
        }
        return advert
    }

    /// Reads an `a{qv}` whose values are `ay`, skipping (and checking) entries of any other shape.
    static func readManufacturerData(_ r: inout DBusWireCursor, into advert: inout Advert) throws {
        var entries = try r.enterArray(elementAlignment: 8)
        while !entries.isAtEnd {
            try entries.align(8)
            let company = try entries.readUInt16()
            let save = entries
            if wireEquals(try entries.enterVariant(), "ay") {
                advert.addManufacturer(company, try entries.readByteArray())
                entries.leaveVariant()
            } else {
                entries = save
                try entries.skipVariant()
            }
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
}
