// How far behind the tally's radio a receiver's radio broadcasts the tally's beacon (docs/LEDGER.md,
// "The beacon from every receiver"): the instructor's tally (`PollController`, linked to the ledger
// with `TallyLedgerLink`, as `clicker-tally --ledger` runs it) on a radio that records each payload
// it is given, and RECEIVERS receivers (`LedgerBeaconFeed` and `BeaconRelay`, each with its own
// thread and connection, as `clicker-tally receiver` runs them) on radios that record theirs, all on
// a private PostgreSQL server on this machine. VOTERS voters cast over the first third of SECONDS,
// so the beacon rotates acknowledgements as in a lecture, then it goes quiet (a STATE a second).
// Delay: from the tally's radio being given a payload to a receiver's radio being given the same
// one. Beside it, in the same run, how long a payload stays on the tally's radio before the next
// replaces it: a delay well under that means a receiver broadcasts, most of the time, what the tally
// does. A payload replaced before a receiver read it is skipped there (only the newest matters).
// Run: swift run -c release --package-path Benchmarks BeaconRelay [--receivers 3] [--voters 300]
//      [--seconds 30]
import ClickerLedger
import ClickerTransport
import ClickerWire
import Foundation
import Logging
import PostgresTestSupport
import Receivers
import Synchronization
import TallyDaemon

struct Options {
    var receivers = 3, voters = 300, seconds = 30

    init(_ args: [String]) throws {
        var it = args.makeIterator()
        while let a = it.next() {
            guard let v = it.next(), let n = Int(v) else { throw Usage("\(a) needs a whole number") }
            switch a {
            case "--receivers" where (1...20).contains(n): receivers = n
            case "--voters" where (0...2000).contains(n): voters = n
            case "--seconds" where (5...600).contains(n): seconds = n
            default: throw Usage("unknown option or value out of range: \(a) \(v)")
            }
        }
    }
}

struct Usage: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// A radio that records each payload it is given, with when; the tally's scans what `ads` yields.
final class TimedRadio: CentralTransport, BroadcasterTransport {
    let capabilities: BroadcastCapabilities
    let (stream, ads) = AsyncThrowingStream<AdvertisementReport, any Error>.makeStream()
    private let log = Mutex<[(ContinuousClock.Instant, BroadcastPayload)]>([])
    init(_ capabilities: BroadcastCapabilities) { self.capabilities = capabilities }
    var payloads: [(ContinuousClock.Instant, BroadcastPayload)] { log.withLock { $0 } }

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> { stream }
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        throw TransportError.unsupported("no GATT")
    }
    func status() -> AsyncStream<RadioStatus> { AsyncStream { $0.yield(RadioStatus(adapter: "bench", state: .scanning)) } }
    func broadcastCapabilities() async throws -> BroadcastCapabilities { capabilities }
    func broadcast(_ payload: BroadcastPayload) async throws {
        let now = ContinuousClock.now
        log.withLock { $0.append((now, payload)) }
    }
    func stopBroadcasting() async throws {}
}

func milliseconds(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }

func quantile(_ sorted: [Double], _ q: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * q).rounded()))]
}

func ms(_ x: Double) -> String { x.isNaN ? "-" : String(format: "%.0f ms", x) }

let options: Options
do { options = try Options(Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandle.standardError.write(Data("BeaconRelay: \(error)\n".utf8))
    exit(2)
}

let quiet = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
let server = try PostgresTestServer()
defer { server.stop() }
let url = try server.makeDatabase("relay")
let directory = NSTemporaryDirectory() + "beacon-relay-\(getpid())"
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: directory) }

let code = try JoinCode(parsing: "4821-K7QXM-3PF9A")
let secret = PollSecret(deriving: code)
let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
let link = try await TallyLedgerLink.start(url: url, poll: 1, controller: controller, journalPath: directory + "/tally.sqlite",
                                           radioEpoch: 0, logger: quiet)
let tallyRadio = TimedRadio(.extended)
let linked = Task { await link.run(logger: quiet) }
let tally = Task { try await controller.run(central: tallyRadio) }

var relays: [(TimedRadio, LedgerBeaconFeed, Task<BeaconRelay.Summary, Never>)] = []
for _ in 0..<options.receivers {
    let token = try BallotLedger(url: url).issueReceiverToken(poll: 1, validUntil: Int64(Date().timeIntervalSince1970) + 3600)
    guard let feed = LedgerBeaconFeed(url: token.url(replacingCredentialsOf: url), poll: 1) else { fatalError("no thread") }
    let radio = TimedRadio(.extended)
    relays.append((radio, feed, Task { await BeaconRelay(radio: radio, logger: quiet).run(feed.readings, clock: ContinuousClock()) }))
}

// The voters cast over the first third of the run, in order, each once.
let start = ContinuousClock.now
let casting = Duration.seconds(options.seconds) / 3
for v in 0..<options.voters {
    let due = start + casting * (Double(v) / Double(max(1, options.voters)))
    try await Task.sleep(until: due, clock: .continuous)
    let b = Ballot(mode: .anonymous, voteID: code.voteID, question: 1, voterID: UInt32(v + 1), sequence: 1, answer: .choice(UInt8(v % 4)))
    tallyRadio.ads.yield(AdvertisementReport(address: DeviceAddress(rawValue: UInt64(0xC0_0000_0000 + v)), rssi: -50,
                                             companyID: BallotFormat.companyID,
                                             data: BallotCodec.sealAdvertisement(b, key: .anonymous(secret)),
                                             timestamp: RadioInstant(nanoseconds: UInt64(milliseconds(.now - start) * 1e6))))
}
try await Task.sleep(until: start + .seconds(options.seconds), clock: .continuous)

tally.cancel()
_ = try? await tally.value
_ = await link.finish()
linked.cancel()
await linked.value
for (_, feed, task) in relays {
    await feed.stop()
    _ = await task.value
}

// The tally's payloads while it ran (its closing payload and stop are not part of the lecture).
let sent = tallyRadio.payloads
var lifetimes: [Double] = []
for (a, b) in zip(sent, sent.dropFirst()) { lifetimes.append(milliseconds(b.0 - a.0)) }
lifetimes.sort()
let counted = await controller.results().voters
print("BeaconRelay: \(options.receivers) receivers, \(options.voters) voters (\(counted) counted), \(options.seconds) s, "
      + "PostgreSQL on this machine; the tally's radio was given \(sent.count) payloads")
print("  on the tally's radio, a payload stays       p50 \(ms(quantile(lifetimes, 0.5)))   p10 \(ms(quantile(lifetimes, 0.1)))")
var allDelays: [Double] = []
for (k, (radio, _, _)) in relays.enumerated() {
    var firstAt: [[[UInt8]]: ContinuousClock.Instant] = [:]
    for (t, p) in radio.payloads where firstAt[p.frames] == nil { firstAt[p.frames] = t }
    var delays: [Double] = []
    for (t, p) in sent { if let r = firstAt[p.frames] { delays.append(milliseconds(r - t)) } }
    delays.sort()
    allDelays += delays
    print("  receiver \(k + 1): broadcast \(delays.count) of them (\(String(format: "%.1f", 100 * Double(delays.count) / Double(max(1, sent.count)))) %), "
          + "delay p50 \(ms(quantile(delays, 0.5))), p99 \(ms(quantile(delays, 0.99))), max \(ms(delays.last ?? .nan))")
}
allDelays.sort()
let p50Life = quantile(lifetimes, 0.5)
print("  all receivers: delay p50 \(ms(quantile(allDelays, 0.5))), p99 \(ms(quantile(allDelays, 0.99))); "
      + String(format: "p99 delay / a payload's p50 time on the tally's radio: %.2f", quantile(allDelays, 0.99) / p50Life))
