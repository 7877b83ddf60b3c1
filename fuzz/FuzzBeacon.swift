// libFuzzer target: the voter's beacon decoder (docs/PROTOCOL.md §11.6). Compiled together with the
// ClickerWire sources (see run.sh), so no `import ClickerWire`.
// Properties: decoding never traps; every accepted frame is exactly what sealing the decoded frame
// produces (nothing but authentic, canonical bytes is accepted; for a signed frame, the bytes before
// its signature, whose check needs the poll's key pair); a TEXT page accepted into the
// assembler never traps it, and a block it completes has the digest it was gathered for.

let beaconCode: JoinCode = {
    guard let c = JoinCode("4821-K7QXM-3PF9A") else { fatalError("fuzz constant") }
    return c
}()
let beaconKey = BeaconKey(PollSecret(deriving: beaconCode))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBeacon(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard case .success(let e) = BeaconCodec.envelope(bytes, key: beaconKey) else { return 0 }
    let frame = e.frame
    let again = e.isSigned ? (try? BeaconCodec.draft(frame, key: beaconKey)).map { $0 + bytes.suffix(BeaconFormat.signatureLength) }
        : try? BeaconCodec.seal(frame, key: beaconKey)
    guard again == bytes else {
        fatalError("accepted a frame that is not the sealing of its fields")
    }
    if case .text(let page) = frame {
        var assembler = BeaconTextAssembler(digest: page.digest)
        if case .complete(let text) = assembler.add(page, key: beaconKey),
           let block = text.block, beaconKey.textDigest(block) != page.digest {
            fatalError("assembled a block whose digest is not the announced one")
        }
    }
    return 0
}
