import ClickerTransport
import ClickerWire

/// Signatures a composer left to make (``BeaconComposer/deferSignatures``): its STATE and ACKS frames
/// end in ``placeholder``, 64 zero bytes where the signature goes. The tally daemon composes on the
/// actor that takes the reports and signs here, on the task that hands payloads to the radio.
public enum BeaconSigning {
    /// Where a deferred signature goes. A real Ed25519 signature is never 64 zero bytes (its second
    /// half is a scalar reduced below the group order, its first an encoded point of a random nonce).
    public static let placeholder = [UInt8](repeating: 0, count: BeaconFormat.signatureLength)

    /// Whether `frame` is a signed frame whose signature is still to make.
    public static func isDraft(_ frame: [UInt8]) -> Bool {
        frame.count > BeaconFormat.signatureLength + 2 && frame[0] == BallotFormat.magic
            && frame[1] >> 4 == BeaconFormat.version && frame[1] & 0x08 == 0 && frame.suffix(BeaconFormat.signatureLength).allSatisfy { $0 == 0 }
    }

    /// Signs every frame of `payload` that still needs it; returns how many it signed.
    @discardableResult
    public static func sign(_ payload: inout BroadcastPayload, signer: BeaconSigner, voteID: UInt16) -> Int {
        var n = 0
        for i in payload.frames.indices where isDraft(payload.frames[i]) {
            payload.frames[i] = sign(frame: payload.frames[i], signer: signer, voteID: voteID)
            n += 1
        }
        return n
    }

    /// One frame ending in ``placeholder``, signed.
    public static func sign(frame: [UInt8], signer: BeaconSigner, voteID: UInt16) -> [UInt8] {
        BeaconCodec.sign(draft: Array(frame.dropLast(BeaconFormat.signatureLength)), signer: signer, voteID: voteID)
    }
}
