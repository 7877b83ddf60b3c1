import ClickerTransport
import ClickerWire

/// What went on the air: estimated from the radio's frame time, or counted from the frames the radio
/// reports it took (a radio whose stack changes frames at its own pace: BlueZ).
extension BeaconComposer {
    /// Credits the frames the previous payload had time to send since it was composed: frame k holds the
    /// air from k frame times after it to k + 1, and counts as sent once it held it for half its time.
    /// Nothing once the radio reports the frames it took (``taken(_:at:)``).
    mutating func credit(at now: UInt32) {
        guard !reportsTaken, let p = previous, !p.items.isEmpty else { return }
        // 10 ms ticks, and an event every 25 ms at 20 ms: whole ticks would credit 5 frames a 100 ms.
        let elapsed = Double(ticks(now, since: p.at)) * 10
        let sent = Int(min(Double(4 * tuning.maxFrames), (elapsed / p.frameTime + 0.5).rounded(.down)))
        guard sent > 0 else { return }
        var index: [UInt32: Int] = [:]
        for (n, a) in acks.enumerated() { index[a.fingerprint.value] = n }
        for s in 0..<sent {
            switch p.items[s % p.items.count] {
            case .state: stateOnAirAt = Double(p.at) * 10 + Double(s) * p.frameTime
            case .acks(let values): for v in values { if let n = index[v] { acks[n].sends += 1 } }
            case .text(let n): if text?.sends.indices.contains(n) == true { text?.sends[n] += 1 }
            }
        }
        previous = nil
    }

    /// The radio took `taken.frame` (one of this composer's, as broadcast: signed or not) at `now`: a STATE
    /// that says what the last payload's says is on the air from now, an ACKS frame's fingerprints and a
    /// TEXT page were sent once more. From the first report on, sends are counted from reports only, and
    /// the frame time the radio reports (a moving average, at most 2 s), when longer than the stated one,
    /// is the frame time STATE is placed by. A frame this composer cannot open (another poll's, the closing
    /// frame of the poll before) is ignored.
    public mutating func taken(_ taken: FrameTaken, at now: UInt32) {
        guard case .success(let envelope) = BeaconCodec.envelope(taken.frame, key: key) else { return }
        let ms = min(2000, Self.milliseconds(taken.frameTime))
        takenFrameTime = takenFrameTime.map { 0.75 * $0 + 0.25 * ms } ?? ms
        switch envelope.frame {
        case .state(let s):
            if s.counter >= stateSaidFrom { stateOnAirAt = Double(now) * 10 }
        case .acks(let a):
            guard a.question == ackQuestion else { return }
            let values = Set(a.fingerprints.map(\.value))
            for n in acks.indices where values.contains(acks[n].fingerprint.value) { acks[n].sends += 1 }
        case .text(let page):
            guard let t = text, page.digest == t.digest, t.sends.indices.contains(Int(page.index)) else { return }
            text?.sends[Int(page.index)] += 1
        }
    }
}
