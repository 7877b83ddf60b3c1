// --hall: a 600-seat lecture hall on the simulated air (30 rows of 20 seats, path loss per link:
// ClickerSim's PathLoss.swift), the beacon scheme in extended frames, with one receiver at the front
// and with three (front, middle, back) side by side on the same seeds: the same seats, the same
// shadowing of the front receiver's links.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import Synchronization

/// The tally's beacon on every receiver, one after the other (the real tally's `MergedBroadcastingCentral`
/// sends to all at once; in order here, so that a seed gives one run).
struct EveryReceiver: BroadcasterTransport {
    let centrals: [SimulatedCentral]

    init(_ centrals: [SimulatedCentral]) { self.centrals = centrals }

    func broadcastCapabilities() async throws -> BroadcastCapabilities { try await centrals[0].broadcastCapabilities() }
    func broadcast(_ payload: BroadcastPayload) async throws { for c in centrals { try await c.broadcast(payload) } }
    func stopBroadcasting() async throws { for c in centrals { try await c.stopBroadcasting() } }
}

/// The reports of the hall's receivers, through the merged central the tally uses (`receivingCentral`),
/// taken step by step: `take(total:)` waits until the air's `total` reports have come through, and
/// returns the new ones in time order (the receivers' streams interleave as their tasks run).
final class MergedReports: Sendable {
    final class Box: Sendable {
        let state = Mutex<(reports: [AdvertisementReport], taken: Int)>(([], 0))
    }
    let box = Box()
    let task: Task<Void, Never>

    init(_ central: any CentralTransport, companyID: UInt16) {
        let stream = central.advertisements(companyID: companyID)
        let box = self.box
        task = Task {
            do { for try await r in stream { box.state.withLock { $0.reports.append(r) } } } catch {}
        }
    }

    deinit { task.cancel() }

    /// Returns once every one of `centrals` scans: the merged central subscribes to each from a task
    /// of its own, and a round must not start before (a seed would not give one run).
    static func untilScanning(_ centrals: [SimulatedCentral]) async {
        for c in centrals {
            for await s in c.status() where s.state == .scanning { break }
        }
    }

    func take(total: Int) async -> [AdvertisementReport] {
        while true {
            let batch = box.state.withLock { b -> [AdvertisementReport]? in
                guard b.taken + b.reports.count >= total else { return nil }
                defer { b.taken += b.reports.count; b.reports.removeAll(keepingCapacity: true) }
                return b.reports
            }
            if let batch {
                return batch.sorted {
                    ($0.timestamp.nanoseconds, $0.address.rawValue, $0.rssi ?? 0) < ($1.timestamp.nanoseconds, $1.address.rawValue, $1.rssi ?? 0)
                }
            }
            await Task.yield()
        }
    }
}

func hallTable(_ options: Options) async throws {
    // Test constant: a valid join code.
    let secret = PollSecret(deriving: try JoinCode(parsing: "4821-K7QXM-3PF9A"))
    let geometry = HallGeometry(rows: 30, seatsPerRow: 20)
    let n = geometry.seats
    let horizon = 30.0
    let setups: [(name: String, receivers: [ReceiverPlacement])] = [("front", [.front]), ("3 receivers", [.front, .middle, .back])]
    let model = LectureHall(geometry: geometry, receivers: [.front, .middle, .back])
    print("TimeToCollect --hall: \(n) voters in a \(geometry.rows) × \(geometry.seatsPerRow) lecture hall (rows 0.9 m, seats 0.55 m,")
    print("the first row 2 m behind the lectern), everyone casting at t = 0; the beacon in signed extended frames")
    print("(beacon+ext of --beacon), voters following it. Path loss per link: IEEE 802.11 TGn model D (free space to")
    print("10 m, slope 3.5 beyond, shadowing σ 3/5 dB drawn once per link), 4 dB per seated person in the straight")
    print("path, 25 dB at most; 0 dBm everywhere; receivers −\(Int(-LectureHall.sensitivity)) dBm; capture at"
          + " \(Int(LectureHall.captureThreshold)) dB. Each receiver scans at 100 % and")
    print("broadcasts the beacon; their reports are merged as the tally merges adapters. \(options.seeds) seeds, medians;"
          + " both rows on the same seeds.")
    print("model coverage (expected share of seats whose link is above sensitivity): front "
          + format1(100 * model.coverage(receiver: 0, sensitivity: LectureHall.sensitivity)) + " %, front+middle+back "
          + format1(100 * model.coverage(receivers: [0, 1, 2], sensitivity: LectureHall.sensitivity)) + " %.")
    print("never heard: seats the tally never counted within \(Int(horizon)) s (median and most over the seeds);"
          + " shown≤1s: counted voters whose \"counted\" showed within 1 s.")
    print("")
    print([pad("receivers", 12), pad("t50 %", 7), pad("t99 %", 7), pad("t100 %", 7), pad("counted", 8), pad("never heard", 12),
           pad("shown≤1s", 9), pad("p99 shown", 10)].joined(separator: " "))
    for setup in setups {
        var results: [RoundResult] = []
        for s in 0..<options.seeds {
            let hall = LectureHall(geometry: geometry, receivers: setup.receivers)
            results.append(try await runRound(voters: n, interval: .milliseconds(100), seed: UInt64(600_000 + s), horizon: horizon,
                                              options: options, detector: PayloadIndexDetector(voters: n),
                                              scheme: BeaconScheme(secret: secret, extended: true), hall: hall))
        }
        let never = results.map { r in r.firstHeard.filter { $0 == nil }.count }.sorted()
        let shown = Shown(results)
        print([pad(setup.name, 12), pad(fmt(median(results.map(\.t50)), horizon: horizon), 7),
               pad(fmt(median(results.map(\.t99)), horizon: horizon), 7), pad(fmt(median(results.map(\.t100)), horizon: horizon), 7),
               pad(format1(100 * results.map(\.heardFraction).sorted()[results.count / 2]) + " %", 8),
               pad("\(never[never.count / 2]) (≤ \(never[never.count - 1]))", 12), pad(shown.withinOneSecond, 9),
               pad(shown.p99.flatMap { $0.isFinite ? format1($0) : nil } ?? "never", 10)].joined(separator: " "))
    }
}
