/// How the tally's beacon reaches the room, from best to none.
public enum BeaconReach: String, Sendable, Codable, CaseIterable {
    /// Extended advertising: frames of up to 222 bytes through BlueZ (58 acknowledgements a frame).
    case extended
    /// Legacy advertising: 24-byte frames (3 acknowledgements a frame).
    case legacy
    /// No beacon: the radio cannot broadcast while it scans. Voters need `--question N`, and nobody
    /// learns that their vote was counted.
    case off
}

/// What the simulated air measured for one room size and one kind of beacon: everyone casting at once.
public struct CollectionFigure: Sendable, Codable, Hashable {
    /// Voters in the room.
    public var voters: Int
    /// Seconds until 99 % and 100 % of the room were counted (medians of 5 seeds); nil where the run
    /// ended (30 s) first, with ``countedAtEnd`` of the room counted.
    public var seconds99: Double?
    public var seconds100: Double?
    /// The share of the room counted when the run ended (1 when all were).
    public var countedAtEnd: Double
    /// The share of voters that showed *counted* within 1 s of being counted (nil without a beacon:
    /// nobody is told).
    public var shownWithinOneSecond: Double?
}

/// The figures the doctor prints, one place in code for each room size it names and each kind of beacon.
///
/// From `swift run -c release --package-path Benchmarks TimeToCollect --beacon --seeds 5` (the room of 40:
/// `--beacon --rooms 40 --seeds 5`; its voters following the beacon wait for the first STATE frame, so a
/// small room is counted sooner without one, where they were given `--question`)
/// (5 seeds, medians; everyone casting at t = 0; voters following the beacon with `clicker-vote`'s own
/// follower; the first table of docs/SIMULATION.md, "Time to collect"). `off` is the benchmark's
/// `today` scheme (no beacon, voters advertise at 100 ms until the end), `legacy` its `beacon`, `extended`
/// its `beacon+ext`. A simulation of one room on one channel model, not a promise about every room.
public enum CollectionFigures {
    public static let rooms = [40, 300, 1000]

    public static let table: [BeaconReach: [CollectionFigure]] = [
        .extended: [
            CollectionFigure(voters: 40, seconds99: 1.38, seconds100: 1.38, countedAtEnd: 1, shownWithinOneSecond: 1),
            CollectionFigure(voters: 300, seconds99: 1.37, seconds100: 1.56, countedAtEnd: 1, shownWithinOneSecond: 1),
            CollectionFigure(voters: 1000, seconds99: 3.16, seconds100: 3.50, countedAtEnd: 1, shownWithinOneSecond: 0.9996),
        ],
        .legacy: [
            CollectionFigure(voters: 40, seconds99: 1.32, seconds100: 1.32, countedAtEnd: 1, shownWithinOneSecond: 1),
            CollectionFigure(voters: 300, seconds99: 2.34, seconds100: 2.63, countedAtEnd: 1, shownWithinOneSecond: 0.3413),
            CollectionFigure(voters: 1000, seconds99: 8.15, seconds100: 12.49, countedAtEnd: 1, shownWithinOneSecond: 0.1752),
        ],
        .off: [
            CollectionFigure(voters: 40, seconds99: 0.37, seconds100: 0.37, countedAtEnd: 1, shownWithinOneSecond: nil),
            CollectionFigure(voters: 300, seconds99: 4.57, seconds100: 6.55, countedAtEnd: 1, shownWithinOneSecond: nil),
            CollectionFigure(voters: 1000, seconds99: nil, seconds100: nil, countedAtEnd: 0.201, shownWithinOneSecond: nil),
        ],
    ]

    /// The figures of `reach`, one per room of ``rooms``.
    public static func figures(_ reach: BeaconReach) -> [CollectionFigure] { table[reach] ?? [] }
}
