// A campus course's class list: 100,000 rows of CSV read (`Roster(csv:)`: every row checked, no
// student ID or enrollment code twice) and enrolled in one transaction (`ClickerStore.enroll`), as
// `clicker-tally roster import` does. Both are linear in the rows: seconds, not minutes.
//
// The time bound: Benchmarks/Thresholds/RosterImport.*.p90.json hold the p90 of each benchmark as
// recorded in release on the project's 2-core machine class (`benchmark thresholds update`);
// `benchmark thresholds check` fails (benchmarkThresholdRegression, a non-zero exit) when a run's
// p90 wall clock, CPU or peak memory is more than twice the recorded one
// (100,000 rows read and enrolled: see the figures in docs/PERFORMANCE.md). The tolerance is 100 %
// of the recorded value either way, so a faster run is never reported as a deviation. The names
// hold no space: the tool writes a threshold file with spaces turned into underscores but looks it
// up by the name as it is.
//   swift package --package-path Benchmarks benchmark thresholds check --target RosterImport --path Benchmarks/Thresholds
import Benchmark
import ClickerStore
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation

let benchmarks: @Sendable () -> Void = {
    let twiceTheRecorded = BenchmarkThresholds(relative: [.p90: 100])
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .cpuTotal, .peakMemoryResident], maxDuration: .seconds(60),
                                           maxIterations: 5,
                                           thresholds: [.wallClock: twiceTheRecorded, .cpuTotal: twiceTheRecorded,
                                                        .peakMemoryResident: twiceTheRecorded])
    for rows in [10_000, 100_000] {
        var rng = SplitMix64(seed: 37)
        let csv = "name,student_id,enrollment_code\n" + (0..<rows).map { i in
            let key = RosterKey(bytes: (0..<4).flatMap { _ in withUnsafeBytes(of: rng.next()) { Array($0) } })
            return "Student \(i),s\(100_000 + i),\(key.map { "\($0.enrollmentCode)" } ?? "")"
        }.joined(separator: "\n")

        Benchmark("read-\(rows)-rows") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try Roster(csv: csv)) }
        }

        Benchmark("read-and-enroll-\(rows)-rows") { benchmark in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("clicker-bench-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: dir) }
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            let store = try ClickerStore(path: dir + "/bench.sqlite", durability: .normal)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let roster = try Roster(csv: csv)
                try store.enroll(roster.entries.map {
                    EnrolledStudent(studentId: $0.studentID, name: $0.name, enrollmentKey: Data($0.enrollment.description.utf8))
                }, replacingAll: true)
            }
            benchmark.stopMeasurement()
        }
    }
}
