import ClickerTransport
import ClickerWire

extension BeaconCodec {
    /// The first STATE frame of `payload` that opens with `key` (a payload need not lead with it:
    /// docs/PROTOCOL.md §11.11).
    public static func state(in payload: BroadcastPayload, key: BeaconKey) -> BeaconState? {
        for f in payload.frames { if case .success(.state(let s)) = open(f, key: key) { return s } }
        return nil
    }
}
