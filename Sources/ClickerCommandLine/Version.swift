import ClickerWire

/// The release both executables report with `--version`: one number for the package, and the
/// ballot protocol it speaks (docs/PROTOCOL.md), which is what decides whether a voter and a tally
/// understand each other.
public enum ClickerVersion {
    /// The package's release.
    public static let release = "0.2.0"
    /// The ballot protocol version sealed and opened by this build.
    public static let ballotProtocol = Int(BallotFormat.version)

    /// `clicker-vote 0.2.0 (ballot protocol 2)`.
    public static func text(program: String) -> String {
        "\(program) \(release) (ballot protocol \(ballotProtocol))"
    }
}
