// swift-tools-version: 6.1
// Benchmarks, kept apart from the product so that `swift test` never builds them.
// Run: swift package --package-path Benchmarks benchmark   (see README "Performance")
import PackageDescription

let package = Package(
    name: "clicker-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "clicker", path: ".."),
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
        // D-Bus ingest: CPU per PropertiesChanged signal turned into a report by the BlueZ central,
        // against bluez-loadgen playing bluetoothd on a private bus.
        // Run: swift build --package-path Benchmarks -c release --product bluez-loadgen &&
        //      swift run --package-path Benchmarks -c release DBusIngest
        .systemLibrary(name: "CDBusLoadGen", path: "Benchmarks/CDBusLoadGen", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        .executableTarget(name: "bluez-loadgen", dependencies: ["CDBusLoadGen"], path: "Benchmarks/BlueZLoadGen"),
        .executableTarget(
            name: "DBusIngest",
            dependencies: [
                "bluez-loadgen",
                .product(name: "BlueZ", package: "clicker"),
                .product(name: "ClickerTransport", package: "clicker"),
                .product(name: "DBus", package: "clicker"),
                .product(name: "ClickerWire", package: "clicker"),
                .product(name: "ClickerTally", package: "clicker"),
            ],
            path: "Benchmarks/DBusIngest"
        ),
    ]
)
