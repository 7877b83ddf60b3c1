// libFuzzer target: the advertisement decoder. Compiled together with the ClickerWire sources
// (see run.sh), so no `import ClickerWire`.
// Property: decoding never traps, and every accepted payload is exactly what sealing the decoded
// ballot produces (nothing but authentic, canonical bytes is accepted).

let fuzzDevice = DeviceKey(unchecked: (0x20..<0x40).map { UInt8($0) })
let fuzzKeyring = PollKeyring(secret: PollSecret(deriving: vectorCode), roster: [fuzzDevice.rosterKey])
let vectorCode: JoinCode = {
    guard let c = JoinCode("4821-K7QXM-3PF9A") else { fatalError("fuzz constant") }
    return c
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzAdvertisement(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if case .success(let b) = BallotCodec.openAdvertisement(bytes, keyring: fuzzKeyring) {
        guard let key = fuzzKeyring.key(mode: b.mode, voterID: b.voterID),
              BallotCodec.sealAdvertisement(b, key: key) == bytes
        else { fatalError("accepted a payload that is not the sealing of its ballot") }
    }
    return 0
}
