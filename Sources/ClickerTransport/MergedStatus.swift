/// The one `RadioStatus` of several radios (``MergedCentral``): which of them scan, which failed.
///
/// Pure: the merged central keeps each radio's last status and its own note of a radio whose reports
/// ended with an error, and shows them together.
public struct MergedRadioStatus: Sendable, Hashable {
    /// Each radio's last status, in the order the radios were given.
    public var radios: [RadioStatus]
    /// Why a radio's reports ended for good (nil while it delivers), by radio.
    public var failures: [String?]
    /// Why a radio refused the last broadcast (nil when it took it or never broadcast), by radio.
    public var broadcastFailures: [String?]

    public init(names: [String]) {
        radios = names.map { RadioStatus(adapter: $0, state: .starting) }
        failures = names.map { _ in nil }
        broadcastFailures = names.map { _ in nil }
    }

    /// A radio's state, its failure taken into account.
    public func state(of i: Int) -> RadioStatus.State {
        failures[i] != nil ? .stopped : radios[i].state
    }

    /// The merged status:
    /// - `state`: scanning while any radio scans (the poll counts what it hears), else the most hopeful
    ///   of the others (recovering, starting, advertising), stopped only when all stopped;
    /// - `adapter`: every radio's name, in order, each not scanning followed by its state in brackets:
    ///   `hci0, hci1 (failed)`;
    /// - `lastError`: each radio's problem, prefixed with its name, joined by `; `;
    /// - `lastDiscoveryRestart`: the latest of the radios'.
    public var combined: RadioStatus {
        let states = radios.indices.map { self.state(of: $0) }
        let overall: RadioStatus.State =
            if states.contains(.scanning) { .scanning }
            else if states.contains(.recovering) { .recovering }
            else if states.contains(.starting) { .starting }
            else if states.contains(.advertising) { .advertising }
            else { .stopped }
        let names = radios.indices.map { i -> String in
            let name = radios[i].adapter
            switch states[i] {
            case .scanning: return name
            case .stopped: return failures[i] != nil ? "\(name) (failed)" : "\(name) (stopped)"
            case .starting: return "\(name) (starting)"
            case .recovering: return "\(name) (recovering)"
            case .advertising: return "\(name) (not scanning)"
            }
        }
        var errors: [String] = []
        for i in radios.indices {
            let name = radios[i].adapter
            if let f = failures[i] { errors.append("\(name): \(f)") }
            else if let e = radios[i].lastError { errors.append(e.hasPrefix(name) ? e : "\(name): \(e)") }
            if let b = broadcastFailures[i] { errors.append("\(name) beacon: \(b)") }
        }
        return RadioStatus(adapter: names.joined(separator: ", "), state: overall,
                           lastDiscoveryRestart: radios.compactMap(\.lastDiscoveryRestart).max(),
                           lastError: errors.isEmpty ? nil : errors.joined(separator: "; "))
    }
}
