// swift-tools-version: 6.1
// Benchmarks, kept apart from the product so that `swift test` never builds them.
// Run: swift package --package-path Benchmarks benchmark   (see docs/PERFORMANCE.md)
import PackageDescription

let package = Package(
    name: "clicker-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "clicker", path: ".."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Decode, verify and tally, in reports per second (ordo-one benchmark).
        .executableTarget(
            name: "CoreIngest",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
            ],
            path: "Benchmarks/CoreIngest",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Instant-runoff recount after each new ballot, 1,000 ballots over 8 options (ordo-one benchmark).
        .executableTarget(
            name: "InstantRunoff",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
            ],
            path: "Benchmarks/InstantRunoff",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Raw HCI advertising-report parsing, in reports per second (ordo-one benchmark).
        .executableTarget(
            name: "HCIParse",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "HCI", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
            ],
            path: "Benchmarks/HCIParse",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Ballots committed per second, one per transaction and batched (ordo-one benchmark).
        .executableTarget(
            name: "StoreCommit",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ClickerStore", package: "clicker"),
            ],
            path: "Benchmarks/StoreCommit",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Ballots written per second into the PostgreSQL ballot ledger, one per transaction and batched;
        // run beside StoreCommit for SQLite's figures (ordo-one benchmark).
        .executableTarget(
            name: "LedgerWrite",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ClickerLedger", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "PostgresTestSupport", package: "clicker"),
            ],
            path: "Benchmarks/LedgerWrite",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // A campus: 40 rooms' receivers (journal, writer thread, connection each) writing to one
        // PostgreSQL, against one room committed to SQLite as the tally does, in one run (prints its figures).
        // Run: swift run -c release --package-path Benchmarks LedgerRooms
        .executableTarget(
            name: "LedgerRooms",
            dependencies: [
                .product(name: "ClickerLedger", package: "clicker"),
                .product(name: "ClickerStore", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "PostgresTestSupport", package: "clicker"),
                .product(name: "Receivers", package: "clicker"),
            ],
            path: "Benchmarks/LedgerRooms"
        ),
        // How far behind the tally's radio each receiver's radio broadcasts the tally's beacon, through PostgreSQL.
        // Run: swift run -c release --package-path Benchmarks BeaconRelay
        .executableTarget(
            name: "BeaconRelay",
            dependencies: [
                .product(name: "ClickerLedger", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "PostgresTestSupport", package: "clicker"),
                .product(name: "Receivers", package: "clicker"),
                .product(name: "TallyDaemon", package: "clicker"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/BeaconRelay"
        ),
        // A class list of 10,000 and 100,000 rows read and enrolled, as `roster import` does (ordo-one benchmark).
        .executableTarget(
            name: "RosterImport",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ClickerStore", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
            ],
            path: "Benchmarks/RosterImport",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // CPU per live-view frame (render + diff) at 300 voters.
        .executableTarget(
            name: "ViewRender",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "TerminalView", package: "clicker"),
            ],
            path: "Benchmarks/ViewRender",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Virtual seconds until N simulated voters are heard, against the analytic model (prints a table;
        // measures simulated air time, not CPU; --pipeline adds counted through the real ingest pipeline). Run: swift run -c release --package-path Benchmarks TimeToCollect
        .executableTarget(
            name: "TimeToCollect",
            dependencies: [
                .product(name: "ClickerSim", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
                .product(name: "Voter", package: "clicker"),
            ],
            path: "Benchmarks/TimeToCollect"
        ),
        // CPU of the live view's own loop (real pseudo-terminal, real PollController) at 300 voters and
        // 100 ballots/s. Run: swift run --package-path Benchmarks -c release ViewLoop
        .executableTarget(
            name: "ViewLoop",
            dependencies: [
                .product(name: "TallyDaemon", package: "clicker"),
                .product(name: "TerminalView", package: "clicker"),
                .product(name: "TerminalTestSupport", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
            ],
            path: "Benchmarks/ViewLoop"
        ),
        // D-Bus ingest: CPU per PropertiesChanged signal turned into a report by the BlueZ central,
        // against bluez-loadgen playing bluetoothd on a private bus.
        // Run: swift build --package-path Benchmarks -c release --product bluez-loadgen &&
        //      swift run --package-path Benchmarks -c release DBusIngest
        .systemLibrary(name: "CDBusLoadGen", path: "Benchmarks/CDBusLoadGen", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        // SwiftPM 6.3 gives a C target none of its system library's pkg-config flags (Swift targets get
        // them), so the C target names libdbus's two header folders (Debian's, on either architecture).
        .executableTarget(name: "bluez-loadgen", dependencies: ["CDBusLoadGen"], path: "Benchmarks/BlueZLoadGen",
                          cSettings: [.unsafeFlags(["-I/usr/include/dbus-1.0",
                                                    "-I/usr/lib/x86_64-linux-gnu/dbus-1.0/include",
                                                    "-I/usr/lib/aarch64-linux-gnu/dbus-1.0/include"])]),
        .executableTarget(
            name: "DBusIngest",
            dependencies: [
                "bluez-loadgen",
                .product(name: "BlueZ", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "DBus", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
                .product(name: "ClickerCommandLine", package: "clicker"),
            ],
            path: "Benchmarks/DBusIngest"
        ),
    ]
)
