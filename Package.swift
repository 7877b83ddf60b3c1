// swift-tools-version: 6.1
// Classroom clicker over Bluetooth LE: a tally daemon (central) and a voter CLI (peripheral).
import PackageDescription

let package = Package(
    name: "clicker",
    platforms: [.macOS(.v14)],
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
        .library(name: "TerminalView", targets: ["TerminalView"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // C libraries
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CBluetooth", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),

        // Pure core: no I/O
        .target(name: "ClickerWire", dependencies: ["ClickerTransport", .product(name: "Crypto", package: "swift-crypto")]),
        .target(name: "ClickerTally", dependencies: ["ClickerWire", "ClickerTransport"]),
        .target(name: "ClickerTransport"),

        // Radios: backends adapt the outside world to ClickerTransport
        .target(name: "ClickerSim", dependencies: ["ClickerTransport"]),
        .target(name: "DBus", dependencies: ["CDBus"]),
        // Private dbus-daemon + helper processes for tests (used only by test targets).
        .target(name: "DBusTestSupport", dependencies: ["DBus"]),
        .target(name: "BlueZ", dependencies: ["DBus", "ClickerTransport", .product(name: "Logging", package: "swift-log")]),
        .target(name: "HCI", dependencies: ["CBluetooth", "ClickerTransport", .product(name: "Logging", package: "swift-log")]),

        // Application layers
        .target(name: "ClickerStore", dependencies: [.product(name: "GRDB", package: "GRDB.swift")]),
        .target(name: "TerminalView"),
        .target(name: "TallyDaemon", dependencies: [
            "ClickerWire", "ClickerTally", "ClickerTransport", "ClickerStore", "TerminalView", "DBus",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .target(name: "Voter", dependencies: ["ClickerWire", "ClickerTransport", .product(name: "Logging", package: "swift-log")]),

        // Executables only wire things together
        .executableTarget(name: "clicker-tally", dependencies: [
            "TallyDaemon", "ClickerSim", "BlueZ", "HCI", "Voter", "DBus", "ClickerStore", "TerminalView",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),
        .executableTarget(name: "clicker-vote", dependencies: [
            "Voter", "ClickerSim", "BlueZ", "HCI",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        ]),

        // Tier 1: pure core and simulated radio
        .testTarget(name: "ClickerWireTests", dependencies: ["ClickerWire", "ClickerTransport"]),
        .testTarget(name: "ClickerTallyTests", dependencies: ["ClickerTally", "ClickerWire", "ClickerTransport"]),
        .testTarget(name: "ClickerSimTests", dependencies: ["ClickerSim", "ClickerTransport", "ClickerWire", "ClickerTally"]),
        .testTarget(name: "HCITests", dependencies: ["HCI", "CBluetooth", "ClickerTransport"]),
        .testTarget(name: "ClickerStoreTests", dependencies: ["ClickerStore"]),
        .testTarget(name: "TerminalViewTests", dependencies: ["TerminalView", "ClickerWire"], exclude: ["Snapshots"]),
        // Tier 2: real dbus-daemon + python-dbusmock standing in for bluetoothd
        .testTarget(name: "DBusTests", dependencies: ["DBus", "DBusTestSupport"]),
        .testTarget(name: "BlueZTests", dependencies: ["BlueZ", "DBus", "ClickerWire", "ClickerTally"]),
        .testTarget(name: "TallyDaemonTests", dependencies: ["TallyDaemon", "ClickerSim", "ClickerWire", "DBus", "DBusTestSupport"]),
        .testTarget(name: "VoterTests", dependencies: ["Voter", "ClickerSim", "ClickerWire"]),
    ]
)
