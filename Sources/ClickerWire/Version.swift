/// The release of both programs, for `clicker-tally --version` and `clicker-vote --version`.
public enum ClickerVersion {
    public static let current = "0.2.0"
}
