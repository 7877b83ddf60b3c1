import ArgumentParser
import TerminalView

/// An error for the person at the keyboard: ArgumentParser prints `Error: <description>` and exits 1.
///
/// Its text may quote input (a roster name in an import error, a typed answer): control characters
/// are neutralised, and every line longer than ``MessageText/lineLimit`` characters is cut in the
/// middle, so an echoed 300-character answer does not bury the hint that follows it.
public struct Failure: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) {
        self.description = TerminalText.safe(MessageText.clipped(description), keepingNewlines: true)
    }
}

/// Text of messages that may echo what someone typed.
public enum MessageText {
    /// The longest line a message keeps whole.
    public static let lineLimit = 200

    /// `text` with every line above `limit` characters cut in the middle: its start, how much was
    /// cut, and its end (where the hint usually is). The result is bounded whatever was echoed.
    public static func clipped(_ text: String, limit: Int = lineLimit) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let chars = Array(line)
            guard chars.count > limit else { return String(line) }
            // The marker counts in the limit (at its longest: the cut has no more digits than the
            // line's length), so a clipped line is never clipped again.
            let room = max(0, limit - "…( characters cut)…".count - String(chars.count).count)
            let head = room / 3, tail = room - head
            let cut = chars.count - head - tail
            return String(chars[..<head]) + "…(\(cut) characters cut)…" + String(chars[(chars.count - tail)...])
        }.joined(separator: "\n")
    }
}

extension ValidationError {
    /// A usage error whose text quotes what was typed: made safe and bounded like ``Failure``.
    public init(quoting text: String) {
        self.init(Failure(text).description)
    }
}
