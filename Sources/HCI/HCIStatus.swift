import ClickerTransport
import Synchronization

/// Holds the current `RadioStatus` and hands it to every `status()` stream, now and on each change.
final class StatusBroadcaster: Sendable {
    private struct State {
        var current: RadioStatus
        var nextID = 0
        var continuations: [Int: AsyncStream<RadioStatus>.Continuation] = [:]
    }

    private let state: Mutex<State>

    init(_ initial: RadioStatus) { state = Mutex(State(current: initial)) }

    var current: RadioStatus { state.withLock { $0.current } }

    func stream() -> AsyncStream<RadioStatus> {
        let (stream, continuation) = AsyncStream<RadioStatus>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = state.withLock { s in
            let id = s.nextID
            s.nextID += 1
            s.continuations[id] = continuation
            continuation.yield(s.current)
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Applies `change`; publishes the result when it differs.
    func update(_ change: (inout RadioStatus) -> Void) {
        state.withLock { s in
            var next = s.current
            change(&next)
            guard next != s.current else { return }
            s.current = next
            for c in s.continuations.values { c.yield(next) }
        }
    }

    /// Finishes every stream (after a final update).
    func finish() {
        let all = state.withLock { s in
            defer { s.continuations = [:] }
            return Array(s.continuations.values)
        }
        for c in all { c.finish() }
    }
}

/// The power-on sequence both roles share. Returns the controller's public address.
///
/// Reset (optional) clears any scan/advertising state a previous owner left; Set Event Mask adds
/// the LE Meta event (not in the default mask); LE Set Event Mask adds extended advertising
/// reports; Read BD_ADDR names the controller in the status.
func initializeController(_ controller: HCIController, reset: Bool, timeout: Duration) async throws -> DeviceAddress {
    if reset { _ = try await controller.executeNow(.reset, timeout: max(timeout, .seconds(5))) }
    _ = try await controller.executeNow(.setEventMask(HCICommand.eventMaskWithLEMeta), timeout: timeout)
    _ = try await controller.executeNow(.leSetEventMask(HCICommand.leEventMaskWithExtendedReports), timeout: timeout)
    let bdaddr = try await controller.executeNow(.readBDAddr, timeout: timeout)
    guard bdaddr.count >= 6 else { throw HCIError.malformedReply(.readBDAddr) }
    return DeviceAddress(bdaddr[5], bdaddr[4], bdaddr[3], bdaddr[2], bdaddr[1], bdaddr[0])
}

/// The default clock of HCI report timestamps: monotonic (`ContinuousClock`), nanoseconds since
/// its first use.
///
/// `RadioInstant.now()` would be the natural choice, but in the current ClickerTransport it
/// reads the clock *before* its lazily initialised origin, so its first call computes a negative
/// duration and traps. Until that is fixed, this clock is used; pass `clock: RadioInstant.now`
/// in the options to share the transport-wide clock.
public enum HCIClock {
    private static let origin = ContinuousClock.now

    public static func now() -> RadioInstant {
        let start = origin   // initialise the origin before reading the clock
        let (s, atto) = (ContinuousClock.now - start).components
        return RadioInstant(nanoseconds: UInt64(max(0, s)) * 1_000_000_000 + UInt64(max(0, atto) / 1_000_000_000))
    }
}
