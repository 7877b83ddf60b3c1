import ArgumentParser
import TerminalView

/// An error for the person at the keyboard: ArgumentParser prints `Error: <description>` and exits 1.
///
/// Its text may quote input (a roster name in an import error, a typed answer): control characters
/// are neutralised, and a word longer than ``MessageText/wordLimit`` characters (an echoed
/// 300-character answer) is cut in its middle, so that it does not bury the hint that follows it.
/// The message's own sentences are never cut: only a line beyond ``MessageText/lineLimit`` (input
/// echoed with spaces in it) is.
public struct Failure: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) {
        self.description = TerminalText.safe(MessageText.clipped(description), keepingNewlines: true)
    }
}

/// Text of messages that may echo what someone typed.
public enum MessageText {
    /// The longest word a message keeps whole: no word of ours is this long, an echoed token may be.
    public static let wordLimit = 120
    /// The longest line a message keeps whole (a bound on echoed input with spaces in it).
    public static let lineLimit = 2000

    /// `text` with every word above `wordLimit` characters, then every line above `limit`
    /// characters, cut in the middle: its start, how much was cut, and its end. The result is
    /// bounded whatever was echoed, and a message of words of ours is kept whole.
    public static func clipped(_ text: String, limit: Int = lineLimit) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let words = line.split(separator: " ", omittingEmptySubsequences: false)
                .map { cut(String($0), to: wordLimit) }.joined(separator: " ")
            return cut(words, to: limit)
        }.joined(separator: "\n")
    }

    /// `text` whole when at most `limit` characters, else its start, how much was cut, and its end.
    static func cut(_ text: String, to limit: Int) -> String {
        let chars = Array(text)
        guard chars.count > limit else { return text }
        // The marker counts in the limit (at its longest: the cut has no more digits than the
        // text's length), so a clipped text is never clipped again.
        let room = max(0, limit - "…( characters cut)…".count - String(chars.count).count)
        let head = room / 3, tail = room - head
        let n = chars.count - head - tail
        return String(chars[..<head]) + "…(\(n) characters cut)…" + String(chars[(chars.count - tail)...])
    }
}

extension ValidationError {
    /// A usage error whose text quotes what was typed: made safe and bounded like ``Failure``.
    public init(quoting text: String) {
        self.init(Failure(text).description)
    }
}
