/// How long a question's texts may be, wherever a question comes from (a question file, the
/// command line, D-Bus): a title or an option text goes to the log, the live view, the projector
/// page, the beacon and every chart, so a 10 MB title would be a 10 MB log line and SVG.
public enum QuestionLimits {
    /// At most this many characters in a title (a long question reads from the slide, not the chart).
    public static let titleCharacters = 300
    /// At most this many characters in an option text.
    public static let optionCharacters = 120

    /// How many characters `text` has, counted up to `limit + 1` only (a 10 MB text costs no more
    /// than a short one to refuse).
    static func length(_ text: some StringProtocol, limit: Int) -> Int {
        var n = 0
        for _ in text {
            n += 1
            if n > limit { break }
        }
        return n
    }

    /// Whether `text` has more than `limit` characters.
    static func exceeds(_ text: some StringProtocol, _ limit: Int) -> Bool { length(text, limit: limit) > limit }
}
