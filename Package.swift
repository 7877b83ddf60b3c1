// swift-tools-version: 6.1
// Classroom clicker over Bluetooth LE: a tally daemon (central) and a voter CLI (peripheral).
import PackageDescription

#if canImport(Glibc)
import Glibc

/// Whether the glibc here loads packed relative relocations (DT_RELR, glibc 2.36: Debian 12, Ubuntu
/// 24.04). The binaries are built where they run (scripts/install.sh), so this glibc is theirs.
let glibcHasRELR: Bool = {
    var buffer = [UInt8](repeating: 0, count: 64)
    let n = buffer.withUnsafeMutableBufferPointer { b in
        b.baseAddress.map { $0.withMemoryRebound(to: CChar.self, capacity: 64) { confstr(Int32(_CS_GNU_LIBC_VERSION), $0, 64) } } ?? 0
    }
    guard n > 1, n <= buffer.count else { return false }
    let text = String(decoding: buffer[..<(n - 1)], as: UTF8.self)   // "glibc 2.36"
    let version = text.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
    return version.count >= 2 && (version[0], version[1]) >= (2, 36)
}()
#else
let glibcHasRELR = false
#endif

/// Link flags of the two executables, for resident memory (docs/PERFORMANCE-daemon.md): lld,
/// identical code folding, no export of every symbol to the dynamic table (the static Swift runtime's
/// link arguments ask for it; nothing looks our symbols up), and packed relative relocations where
/// glibc loads them (the 95,000 relocations of a static build then take 18 kB instead of 2.3 MB, all
/// read at every start). Together they take about 4 MB off the daemon's RSS.
let lean: [LinkerSetting] = [
    .unsafeFlags(["-use-ld=lld", "-Xlinker", "--icf=all", "-Xlinker", "--no-export-dynamic"]
                 + (glibcHasRELR ? ["-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"] : []),
                 .when(platforms: [.linux])),
]

/// The tally's code layout, for resident memory (docs/PERFORMANCE-daemon.md, "Code layout"): in a
/// release build, lld puts first the functions a daemon at work runs (`Linker/clicker-tally.order`,
/// written by tools/order-tally.sh from a profile) and gathers the compiler's private helper
/// functions, which have no symbol to order by, in one place (`Linker/private-text.ld`, added to lld's
/// default layout). A fault on code maps the 64 KiB around it, so code that runs spread over the binary
/// keeps most of it resident. It works per section: scripts/release-build.sh compiles every module,
/// the dependencies included, with a section per function.
let tallyLayout: [LinkerSetting] = [
    .unsafeFlags(["-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Linker/clicker-tally.order",
                  "-Xlinker", "--no-warn-symbol-ordering",
                  "-Xlinker", "-T", "-Xlinker", "\(Context.packageDirectory)/Linker/private-text.ld"],
                 .when(platforms: [.linux], configuration: .release)),
]

let package = Package(
    name: "clicker",
    // Linux only: the backends need libdbus and BlueZ, the tests a dbus-daemon and /proc.
    products: [
        .executable(name: "clicker-tally", targets: ["clicker-tally"]),
        .executable(name: "clicker-vote", targets: ["clicker-vote"]),
        .library(name: "ClickerWire", targets: ["ClickerWire"]),
        .library(name: "ClickerTally", targets: ["ClickerTally"]),
        .library(name: "ClickerTransport", targets: ["ClickerTransport"]),
        .library(name: "ClickerSim", targets: ["ClickerSim"]),
        .library(name: "DBus", targets: ["DBus"]),
        .library(name: "BlueZ", targets: ["BlueZ"]),
        .library(name: "HCI", targets: ["HCI"]),
        .library(name: "ClickerStore", targets: ["ClickerStore"]),
        .library(name: "ClickerLedger", targets: ["ClickerLedger"]),
        // A receiver's counting, journal and writer; the LedgerRooms benchmark runs forty of them.
        .library(name: "Receivers", targets: ["Receivers"]),
        // A private PostgreSQL server for the ledger's tests and the LedgerWrite benchmark.
        .library(name: "PostgresTestSupport", targets: ["PostgresTestSupport"]),
        .library(name: "TerminalView", targets: ["TerminalView"]),
        .library(name: "TallyDaemon", targets: ["TallyDaemon"]),
        .library(name: "ProjectorPage", targets: ["ProjectorPage"]),
        .library(name: "ProjectorWeb", targets: ["ProjectorWeb"]),
        // The voter's logic (beacon follower, session); the TimeToCollect benchmark runs its follower.
        .library(name: "Voter", targets: ["Voter"]),
        // What both executables share; the DBusIngest benchmark sets glibc's allocator up as they do.
        .library(name: "ClickerCommandLine", targets: ["ClickerCommandLine"]),
        // A pseudo-terminal for the view's tests and the ViewLoop benchmark; not used by the executables.
        .library(name: "TerminalTestSupport", targets: ["TerminalTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // 4.x: Crypto and _CryptoExtras import FoundationEssentials where it exists; 3.x imported Foundation,
        // which links Foundation and ICU (43 MB) into clicker-vote.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // The projector page's server. No traits: neither swift-configuration nor the parts that need all of Foundation.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        // C libraries
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CBluetooth", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        .systemLibrary(name: "CMalloc"),   // glibc's <malloc.h> (mallopt)
        // PostgreSQL's client: its header (CLibPQ), and the library loaded on first use (CLibPQLoader).
        .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
        .target(name: "CLibPQLoader", linkerSettings: [.linkedLibrary("dl")]),

        // Pure core: no I/O
        .target(name: "ClickerWire", dependencies: ["ClickerTransport", .product(name: "Crypto", package: "swift-crypto"),
                                              .product(name: "_CryptoExtras", package: "swift-crypto")]),
        .target(name: "ClickerTally", dependencies: ["ClickerWire", "ClickerTransport"]),
        .target(name: "ClickerTransport"),
        // `doctor`: what a report of this machine's radio concludes (can the tally run, which beacon, the room's figures).
        .target(name: "ClickerDoctor"),
        // Question definitions from text: the question file (YAML) and ad-hoc kinds, options and ranges.
        .target(name: "ClickerQuestions", dependencies: ["ClickerTally", "ClickerWire", .product(name: "Yams", package: "Yams")]),

        // Radios: backends adapt the outside world to ClickerTransport
        .target(name: "ClickerSim", dependencies: ["ClickerTransport", "OSThreads"]),
        .target(name: "DBus", dependencies: ["CDBus", "OSThreads"]),
        // Private dbus-daemon + helper processes for tests (used only by test targets).
        .target(name: "DBusTestSupport", dependencies: ["DBus"]),
        // Test targets only: poll secrets derived once per test process (scrypt is slow on purpose), a clock
        // tests move (TestClock), and `eventually` for states that announce no event.
        .target(name: "ClickerTestSupport", dependencies: ["ClickerWire", .product(name: "Logging", package: "swift-log")]),
        .target(name: "BlueZ", dependencies: ["DBus", "ClickerTransport", "ClickerDoctor", "OSThreads", .product(name: "Logging", package: "swift-log")]),
        .target(name: "HCI", dependencies: ["CBluetooth", "ClickerTransport", "ClickerDoctor", "OSThreads", .product(name: "Logging", package: "swift-log")]),

        // The one thread starter: OS threads for blocking work kept off the cooperative pool.
        .target(name: "OSThreads"),

        // Application layers
        // Owner-only files: directory checks, mkstemp + fsync + rename, flock, off-pool file work.
        .target(name: "PrivateFiles"),
        // The few items of ICU's 34 MB data package the tally uses, linked in its place
        // (Sources/ICUData/README.md); .incbin finds the data through the header search path.
        .target(name: "ICUData", exclude: ["icudt76l.dat", "items.txt", "README.md"], cSettings: [.headerSearchPath(".")]),
        // PostgreSQL through libpq: connections from a URL, parameterised statements, transactions.
        .target(name: "PostgresClient", dependencies: ["CLibPQ", "CLibPQLoader"]),
        // The ballot ledger several receivers share in PostgreSQL: versioned schema, the counting rule as one upsert.
        .target(name: "ClickerLedger", dependencies: ["PostgresClient", "ClickerTally", "ClickerWire", "ClickerTransport", "OSThreads"]),
        // A private PostgreSQL server (initdb + pg_ctl) for tests and benchmarks (used only by them).
        .target(name: "PostgresTestSupport"),
        // Receivers: what one central hears, counted and written to the ledger through a local journal.
        .target(name: "Receivers", dependencies: ["ClickerLedger", "ClickerTally", "ClickerTransport", "ClickerWire", "OSThreads",
                                           "PrivateFiles", "TallyDaemon", .product(name: "GRDB", package: "GRDB.swift"),
                                           .product(name: "Logging", package: "swift-log"),
                                           .product(name: "AsyncAlgorithms", package: "swift-async-algorithms")]),
        .target(name: "ClickerStore", dependencies: ["ClickerTransport", "ClickerWire", "ClickerTally", "PrivateFiles", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "TerminalView"),
        // A pseudo-terminal pair that tests and the ViewLoop benchmark type into and read back.
        .target(name: "TerminalTestSupport", dependencies: ["TerminalView"]),
        .target(name: "TallyDaemon", dependencies: [
            "ClickerWire", "ClickerTally", "ClickerQuestions", "ClickerTransport", "ClickerStore", "TerminalView", "DBus", "PrivateFiles", "OSThreads",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
        ]),
        // The projector page: what it shows (pure: the snapshot, the page itself) and the server (Hummingbird).
        .target(name: "ProjectorPage", dependencies: ["ClickerTally", "ClickerTransport", "ClickerWire"]),
        .target(name: "ProjectorWeb", dependencies: [
            "ProjectorPage", "TallyDaemon", "ClickerTally", "ClickerWire",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        // An HTTP/1.1 client on NIO for the projector's tests and benchmark (plain requests and SSE streams).
        .target(name: "ProjectorTestSupport", dependencies: [
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
        ]),
        .target(name: "Voter", dependencies: ["ClickerWire", "ClickerTransport", "PrivateFiles", .product(name: "Logging", package: "swift-log"),
                                       .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")]),

        // The room of `clicker-tally --simulate N`: simulated students on the simulated air, following the beacon.
        .target(name: "DemoRoom", dependencies: ["ClickerSim", "ClickerTransport", "ClickerWire", "TallyDaemon", "Voter"]),

        // The command-line layer both executables share: radio choice, errors for people, --version,
        // the allocator's arena cap.
        .target(name: "ClickerCommandLine", dependencies: ["ClickerSim", "ClickerWire", "TerminalView", "Voter", "CMalloc", "OSThreads",
                                                      .product(name: "ArgumentParser", package: "swift-argument-parser")]),

        // Executables only wire things together
        .executableTarget(name: "clicker-tally", dependencies: [
            "ClickerCommandLine", "TallyDaemon", "ClickerQuestions", "ClickerSim", "BlueZ", "HCI", "Voter", "DBus", "ClickerStore", "TerminalView", "ClickerDoctor",
            "ProjectorWeb", "PrivateFiles", "DemoRoom", "ICUData", "Receivers", "ClickerLedger",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], linkerSettings: lean + tallyLayout),
        .executableTarget(name: "clicker-vote", dependencies: [
            "ClickerCommandLine", "Voter", "ClickerSim", "BlueZ", "HCI", "ClickerDoctor",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ], linkerSettings: lean),

        // Tier 1: pure core and simulated radio
        .testTarget(name: "ClickerWireTests", dependencies: ["ClickerTestSupport", "ClickerWire", "ClickerTransport", "ClickerSim"]),
        .testTarget(name: "ClickerQuestionsTests", dependencies: ["ClickerQuestions", "ClickerTally", "ClickerWire"]),
        .testTarget(name: "ClickerTallyTests", dependencies: ["ClickerTestSupport", "ClickerTally", "ClickerWire", "ClickerTransport", "ClickerSim"]),
        .testTarget(name: "ClickerSimTests", dependencies: ["ClickerTestSupport", "ClickerSim", "ClickerTransport", "ClickerWire", "ClickerTally",
                                                          "OSThreads"]),
        .testTarget(name: "ClickerDoctorTests", dependencies: ["ClickerDoctor"]),
        .testTarget(name: "HCITests", dependencies: ["HCI", "CBluetooth", "ClickerTransport", "ClickerSim", "ClickerTestSupport"]),
        .testTarget(name: "ClickerStoreTests", dependencies: ["ClickerStore", "ClickerSim", "ClickerWire", "ClickerTally", .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "ClickerLedgerTests", dependencies: ["ClickerLedger", "PostgresClient", "PostgresTestSupport", "ClickerTally",
                                                              "ClickerWire", "ClickerTransport", "OSThreads", "Receivers",
                                                              "ClickerSim", "ClickerTestSupport", "TallyDaemon", "Voter",
                                                              .product(name: "Logging", package: "swift-log"),
                                                              .product(name: "GRDB", package: "GRDB.swift")]),
        .testTarget(name: "TerminalViewTests", dependencies: ["TerminalView", "TerminalTestSupport", "ClickerWire", "ClickerSim"], exclude: ["Snapshots"]),
        // Tier 2: real dbus-daemon + python-dbusmock standing in for bluetoothd
        .testTarget(name: "DBusTests", dependencies: ["ClickerTestSupport", "DBus", "DBusTestSupport"]),
        .testTarget(name: "BlueZTests", dependencies: ["ClickerTestSupport", "BlueZ", "DBus", "ClickerWire", "ClickerTally", "TallyDaemon", "Voter", "ClickerDoctor",
                                                       .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "TallyDaemonTests", dependencies: ["ClickerTestSupport", "TallyDaemon", "ClickerQuestions", "TerminalView", "TerminalTestSupport", "ClickerSim", "ClickerWire", "Voter", "DemoRoom", "DBus", "DBusTestSupport",
                                                             .product(name: "Crypto", package: "swift-crypto"),
                                                             .product(name: "GRDB", package: "GRDB.swift"),
                                                             .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "ProjectorWebTests", dependencies: ["ClickerTestSupport", "ProjectorWeb", "ProjectorPage", "ProjectorTestSupport",
                                                             "ClickerCommandLine", "Voter",
                                                             "TallyDaemon", "ClickerTally", "ClickerWire", "ClickerSim",
                                                             .product(name: "NIOCore", package: "swift-nio")]),
        .testTarget(name: "ClickerCommandLineTests", dependencies: ["ClickerCommandLine", "ClickerSim", "CMalloc", "ClickerTestSupport", "TerminalTestSupport", "Voter"]),
        .testTarget(name: "VoterTests", dependencies: ["ClickerTestSupport", "Voter", "ClickerSim", "ClickerWire", "PrivateFiles",
                                                      .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
                                                      .product(name: "InMemoryLogging", package: "swift-log")]),
    ]
)
