import Logging
import Synchronization

/// A log handler that keeps the messages a logger was given, for tests that check what was said (and
/// how often): `Logger(label: "test", factory: { _ in lines })`.
public final class LogLines: LogHandler, Sendable {
    private let lines = Mutex<[String]>([])
    public var messages: [String] { lines.withLock { $0 } }

    public init() {}

    public func log(event: LogEvent) { lines.withLock { $0.append("\(event.message)") } }

    public subscript(metadataKey _: String) -> Logger.Metadata.Value? {
        get { nil }
        set {}
    }

    public var metadata: Logger.Metadata {
        get { [:] }
        set {}
    }

    public var logLevel: Logger.Level {
        get { .trace }
        set {}
    }
}
