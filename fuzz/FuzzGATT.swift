// libFuzzer target: the GATT ballot decoder (142-byte signed ballots), compiled with the ClickerWire sources.
// Property: decoding never traps; an accepted value is a valid full ballot whose advertisement prefix
// decodes to the same ballot, signed by the key it carries (whose hash is the voter ID in anonymous mode).

let vectorCode: JoinCode = {
    guard let c = JoinCode("4821-K7QXM-3PF9A") else { fatalError("fuzz constant") }
    return c
}()
let fuzzKeyring = PollKeyring(secret: PollSecret(deriving: vectorCode),
                              roster: [DeviceKey(unchecked: (0x20..<0x40).map { UInt8($0) }).rosterKey])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGATT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if case .success(let signed) = BallotCodec.openGATT(bytes, keyring: fuzzKeyring) {
        let b = signed.ballot
        guard let key = fuzzKeyring.key(mode: b.mode, voterID: b.voterID),
              BallotCodec.sealFull(b, key: key) == Array(bytes.prefix(BallotFormat.fullBallotLength)),
              signed.publicKey == Array(bytes[BallotFormat.fullBallotLength..<(BallotFormat.fullBallotLength + 32)])
        else { fatalError("accepted a GATT value that is not the sealing of its ballot") }
        if b.mode == .anonymous, KeyDerivation.anonymousVoterID(publicKey: signed.publicKey) != b.voterID {
            fatalError("accepted an anonymous GATT value whose voter ID is not its key's hash")
        }
        // The advertisement prefix of an accepted GATT ballot decodes to the same ballot.
        guard case .success(let a) = BallotCodec.openAdvertisement(Array(bytes.prefix(22)), keyring: fuzzKeyring), a == b
        else { fatalError("GATT and advertisement disagree") }
    }
    return 0
}
