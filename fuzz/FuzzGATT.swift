// libFuzzer target: the GATT ballot decoder (46-byte full ballots), compiled with the ClickerWire sources.

let vectorCode: JoinCode = {
    guard let c = JoinCode("4821-K7QXM-3PF9A") else { fatalError("fuzz constant") }
    return c
}()
let fuzzKeyring = PollKeyring(joinCode: vectorCode, roster: [DeviceKey(unchecked: (0x20..<0x40).map { UInt8($0) })])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGATT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if case .success(let b) = BallotCodec.openGATT(bytes, keyring: fuzzKeyring) {
        guard let key = fuzzKeyring.key(mode: b.mode, voterID: b.voterID),
              BallotCodec.sealGATT(b, key: key) == bytes
        else { fatalError("accepted a GATT value that is not the sealing of its ballot") }
        // The advertisement prefix of an accepted GATT ballot decodes to the same ballot.
        guard case .success(let a) = BallotCodec.openAdvertisement(Array(bytes.prefix(22)), keyring: fuzzKeyring), a == b
        else { fatalError("GATT and advertisement disagree") }
    }
    return 0
}
