// libFuzzer target: manufacturer data as the radios deliver it, compiled with the ClickerWire sources.
// First byte picks the variant: 0 raw advertising data (HCI), 1 D-Bus a{qv} little-endian,
// 2 D-Bus a{qv} big-endian, 3 text parsers (join code, answer, enrollment code, device key).

let vectorCode: JoinCode = {
    guard let c = JoinCode("4821-K7QXM-3PF9A") else { fatalError("fuzz constant") }
    return c
}()
let fuzzKeyring = PollKeyring(secret: PollSecret(deriving: vectorCode))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManufacturerData(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let entries: Result<[(companyID: UInt16, data: [UInt8])], ManufacturerData.FormatError>
    switch data[0] % 4 {
    case 0: entries = ManufacturerData.entries(advertisingData: bytes)
    case 1: entries = ManufacturerData.entries(dbusMarshalled: bytes, bigEndian: false)
    case 2: entries = ManufacturerData.entries(dbusMarshalled: bytes, bigEndian: true)
    default:
        let text = String(decoding: bytes, as: UTF8.self)
        if let c = try? JoinCode(parsing: text), (try? JoinCode(parsing: c.description)) != c { fatalError("join code round trip") }
        if let a = try? Answer(parsing: text), (try? Answer(parsing: a.description)) != a { fatalError("answer round trip") }
        if let e = try? EnrollmentCode(parsing: text), (try? EnrollmentCode(parsing: e.description)) != e {
            fatalError("enrollment code round trip")
        }
        if let k = try? DeviceKey(encoded: text), (try? DeviceKey(encoded: k.encoded)) != k { fatalError("device key round trip") }
        return 0
    }
    guard case .success(let list) = entries else { return 0 }
    var dict: [UInt16: [UInt8]] = [:]
    for e in list { dict[e.companyID] = e.data }
    let fromList = ManufacturerData.ballotPayload(from: list)
    if case .success(let payload) = fromList {
        guard ManufacturerData.ballotPayload(from: dict) == .success(payload) else { fatalError("dict and list disagree") }
        if case .success(let b) = BallotCodec.openAdvertisement(payload, keyring: fuzzKeyring),
           BallotCodec.sealAdvertisement(b, key: fuzzKeyring.anonymousKey) != payload {
            fatalError("accepted a payload that is not the sealing of its ballot")
        }
    }
    return 0
}
