// Reports per second through the pure ingest pipeline (decode → verify → tally) on one core.
// Run: swift package --package-path Benchmarks benchmark --target CoreIngest
// Targets: repeats of known ballots ≥ 1,000,000/s; all-new ballots (tag + decryption) ≥ 300,000/s.
import Benchmark
import ClickerTally
import ClickerTransport
import ClickerWire

private let code = JoinCode(unsafeText: "4821-K7QXM-3PF9A")
/// S, derived once (scrypt) as the tally does when a poll opens.
private let secret = PollSecret(deriving: code)
private let key = BallotKey.anonymous(secret)

/// `count` reports from distinct voters (and addresses), sealed with the poll key.
private func makeReports(_ count: Int, firstVoter: UInt32 = 1) -> [AdvertisementReport] {
    (0..<count).map { i in
        let voter = firstVoter &+ UInt32(i) &* 2_654_435_761
        let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: 1, answer: .choice(UInt8(i % 4)))
        return AdvertisementReport(address: DeviceAddress(rawValue: UInt64(i) + 1), rssi: -60, companyID: BallotFormat.companyID,
                                   data: BallotCodec.sealAdvertisement(b, key: key),
                                   timestamp: RadioInstant(nanoseconds: UInt64(i) * 1000))
    }
}

/// Flood limits off: these benchmarks measure the verification path itself.
private let unlimited: FloodPolicy = {
    var p = FloodPolicy()
    p.perAddressBurst = 1e12
    p.perAddressPerSecond = 1e12
    p.untrustedBurst = 1e12
    p.untrustedPerSecond = 1e12
    return p
}()

private func freshPipeline() -> IngestPipeline {
    var p = IngestPipeline(secret: secret, policy: unlimited)
    p.tally.open(.choice(1))
    return p
}

extension JoinCode {
    init(unsafeText: String) {
        guard let c = JoinCode(unsafeText) else { fatalError("bad benchmark constant") }
        self = c
    }
}

let benchmarks: @Sendable () -> Void = {
    // Malloc counts per report survive a loaded machine better than wall-clock throughput.
    Benchmark.defaultConfiguration = .init(metrics: [.throughput, .wallClock, .mallocCountTotal],
                                           scalingFactor: .kilo, maxDuration: .seconds(5), maxIterations: 100_000)

    // (a) Exact repeats of 500 known ballots: the cache path, no cryptography.
    Benchmark("Repeats of known ballots (reports)") { benchmark in
        let reports = makeReports(500)
        var p = freshPipeline()
        p.ingest(contentsOf: reports)
        var i = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(p.ingest(reports[i]))
            i = i == 499 ? 0 : i + 1
        }
        benchmark.stopMeasurement()
    }

    // (b) All-new ballots: header checks, tag verification, decryption, tally (fresh pipeline per run).
    Benchmark("All-new ballots (reports)") { benchmark in
        let reports = makeReports(benchmark.scaledIterations.count)
        var p = freshPipeline()
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            blackHole(p.ingest(reports[i]))
        }
        benchmark.stopMeasurement()
    }

    // (c) The decoder alone on new payloads (tag verification + decryption), for comparison.
    Benchmark("Decode and verify only (payloads)") { benchmark in
        let payloads = makeReports(1000).map(\.data)
        let keyring = PollKeyring(secret: secret)
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            blackHole(BallotCodec.openAdvertisement(payloads[i % 1000], keyring: keyring))
        }
        benchmark.stopMeasurement()
    }

    // (d) Forgeries (random tags) from random addresses with the default flood limits: rejected cheaply.
    Benchmark("Forgeries under default flood limits (reports)") { benchmark in
        var reports = makeReports(1000)
        for j in reports.indices { reports[j].data[21] ^= 0x5A }
        var p = IngestPipeline(secret: secret)
        p.tally.open(.choice(1))
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            var r = reports[i % 1000]
            r.address = DeviceAddress(rawValue: UInt64(i) &* 0x9E37_79B9 & 0xFFFF_FFFF_FFFF)
            blackHole(p.ingest(r))
        }
        benchmark.stopMeasurement()
    }

    // (e) The memory-hard step, once per poll on each side: S = scrypt(N = 2^15, r = 8, p = 1) of the
    // join code (docs/DESIGN.md, "The poll secret's cost, measured", quotes this figure).
    Benchmark("Poll secret derivation, scrypt N=2^15 r=8 (derivations)",
              configuration: .init(metrics: [.wallClock, .peakMemoryResident], scalingFactor: .one,
                                   maxDuration: .seconds(10), maxIterations: 30)) { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(PollSecret(deriving: code))
        }
    }

    // (f) A signed GATT value (142 bytes): tag, decryption and the Ed25519 signature.
    Benchmark("Signed GATT ballot decode (values)") { benchmark in
        let sealer = BallotSealer(secret: secret, deviceKey: DeviceKey(bytes: [UInt8](repeating: 7, count: 32))!)
        let values = (0..<100).map { sealer.gattValue(question: 1, sequence: UInt16($0 + 1), answer: .choice(UInt8($0 % 4))) }
        let keyring = PollKeyring(secret: secret)
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            blackHole(BallotCodec.openGATT(values[i % 100], keyring: keyring))
        }
        benchmark.stopMeasurement()
    }

    // (g) Version 4's beacon: a voter verifying a signed ACKS frame of 42 fingerprints (tag and Ed25519
    // signature; PROTOCOL.md §11.2), and the tally signing one (the daemon signs off its ingest actor).
    Benchmark("Signed beacon frame verification (frames)") { benchmark in
        let beaconKey = BeaconKey(secret)
        let signer = BeaconSigner(seed: [UInt8](repeating: 5, count: 32))!
        let frames = (0..<100).map { i in
            try! BeaconCodec.seal(.acks(BeaconAcks(counter: UInt32(i), question: 1,
                                                   fingerprints: (0..<42).map { AckFingerprint(value: UInt32(i * 42 + $0)) })),
                                  key: beaconKey, signer: signer)
        }
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            blackHole(BeaconCodec.open(frames[i % 100], key: beaconKey, publicKey: signer.publicKey))
        }
        benchmark.stopMeasurement()
    }

    Benchmark("Signed beacon frame sealing (frames)") { benchmark in
        let beaconKey = BeaconKey(secret)
        let signer = BeaconSigner(seed: [UInt8](repeating: 5, count: 32))!
        benchmark.startMeasurement()
        for i in benchmark.scaledIterations {
            blackHole(try? BeaconCodec.seal(.acks(BeaconAcks(counter: UInt32(truncatingIfNeeded: i), question: 1,
                                                             fingerprints: (0..<42).map { AckFingerprint(value: UInt32($0)) })),
                                            key: beaconKey, signer: signer))
        }
        benchmark.stopMeasurement()
    }
}
