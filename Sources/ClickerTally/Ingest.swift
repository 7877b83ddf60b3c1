import ClickerTransport
import ClickerWire

/// Entries in the pipeline's caches and per-address tables (all bounded by `FloodPolicy`'s limits;
/// the cache of good ballots also by the open questions, see ``IngestPipeline/forgetClosedQuestions()``).
public struct IngestFootprint: Sendable, Hashable, Codable {
    public var goodCache: Int
    public var badCache: Int
    public var rateLimitedAddresses: Int
    public var trustedAddresses: Int
}

/// Counters of the ingest pipeline.
public struct IngestStats: Sendable, Hashable {
    /// Reports handed to the pipeline (advertisements and GATT values).
    public var reports = 0
    /// Reports answered from the cache of known-good payloads (no cryptography).
    public var cacheHits = 0
    /// Reports answered from the cache of known-bad payloads (no cryptography).
    public var badCacheHits = 0
    /// Tag verifications performed.
    public var verifications = 0
}

/// Result of ingesting one report.
public struct IngestResult: Sendable, Hashable {
    public var outcome: RecordOutcome
    /// The authentic ballot, when there was one (also for repeats and ballots kept apart).
    public var ballot: Ballot?
    /// The voter's counted record for the ballot's question before this ballot was applied (nil when
    /// there was none): what ``Tally/restore(question:voter:to:)`` puts back when the ballot cannot
    /// be saved.
    public var previous: VoterRecord?

    public init(outcome: RecordOutcome, ballot: Ballot?, previous: VoterRecord? = nil) {
        self.outcome = outcome
        self.ballot = ballot
        self.previous = previous
    }
}

/// Decode → verify → tally, for one poll. Pure: time comes from the reports.
///
/// Exact repeats of a payload already verified skip all cryptography. Cheap checks run before any
/// key is used; tag verifications are rate-limited per address and, for addresses that never sent
/// a ballot that was counted, globally. Every report that is not counted is counted by reason in
/// `tally.rejections`.
public struct IngestPipeline: Sendable {
    public let keyring: PollKeyring
    /// The tally; open and close questions on it directly.
    public var tally: Tally
    public var policy: FloodPolicy
    public private(set) var stats = IngestStats()

    var good: [PayloadKey: Ballot] = [:]
    var bad: [PayloadKey: Rejection] = [:]
    var buckets: [DeviceAddress: TokenBucket] = [:]
    var trusted: Set<DeviceAddress> = []
    /// Table size at which idle rate-limit states are next dropped (doubles with what stays).
    var nextAddressTrim = 1024
    var untrusted: TokenBucket
    var offered = OfferedRate()
    var draws: AdmissionRandom
    var windowSecond: UInt64 = .max
    var windowCount = 0
    var suspiciousTotal = 0
    var alertUntil: RadioInstant?
    var lastAlert: RadioInstant?
    var now = RadioInstant.zero

    /// A pipeline for the poll of `keyring`. `tally` must have the same vote ID.
    public init(keyring: PollKeyring, tally: Tally, policy: FloodPolicy = FloodPolicy()) {
        self.keyring = keyring
        self.tally = tally
        self.policy = policy
        untrusted = TokenBucket(tokens: policy.untrustedBurst, last: 0)
        draws = AdmissionRandom(seed: policy.admissionSeed ?? UInt64.random(in: .min ... .max))
    }

    /// A pipeline with a fresh tally for the poll of `secret` (derived once per poll).
    public init(secret: PollSecret, roster: [RosterKey] = [], policy: FloodPolicy = FloodPolicy(),
                changePolicy: ChangePolicy = .latestWins, rosterOnly: Bool = false) {
        self.init(keyring: PollKeyring(secret: secret, roster: roster),
                  tally: Tally(voteID: secret.voteID, policy: changePolicy, rosterOnly: rosterOnly), policy: policy)
    }

    /// The flood alert as of the latest report.
    public var flood: FloodStatus {
        FloodStatus(alert: alertUntil.map { now <= $0 } ?? false, suspiciousThisSecond: windowCount,
                    suspiciousTotal: suspiciousTotal, lastAlert: lastAlert)
    }

    /// Entries held now.
    public var footprint: IngestFootprint {
        IngestFootprint(goodCache: good.count, badCache: bad.count, rateLimitedAddresses: buckets.count,
                        trustedAddresses: trusted.count)
    }

    /// Ingests one advertisement report.
    public mutating func ingest(_ report: AdvertisementReport) -> IngestResult {
        stats.reports += 1
        if report.timestamp > now { now = report.timestamp }
        guard report.companyID == BallotFormat.companyID else { return rejected(.notOurs, at: report.timestamp) }
        let data = report.data
        let key = data.count == BallotFormat.advertisementLength ? PayloadKey(data) : nil
        if let key {
            if let b = good[key] {
                stats.cacheHits += 1
                var previous: VoterRecord?
                let outcome = tally.record(b, from: report.address, at: report.timestamp, proof: .advertised,
                                           previous: &previous)
                return IngestResult(outcome: outcome, ballot: b, previous: previous)
            }
            if let r = bad[key] {
                stats.badCacheHits += 1
                return rejected(r, at: report.timestamp)
            }
        }
        let result = data.withUnsafeBytes { p in
            verify(p, length: BallotFormat.advertisementLength, address: report.address, at: report.timestamp)
        }
        switch result {
        case .success(let b):
            if let key {
                if good.count >= policy.goodCacheLimit { good.removeAll(keepingCapacity: true) }
                good[key] = b
            }
            var previous: VoterRecord?
            let outcome = tally.record(b, from: report.address, at: report.timestamp, proof: .advertised,
                                       previous: &previous)
            trust(report.address, after: outcome)
            return IngestResult(outcome: outcome, ballot: b, previous: previous)
        case .failure(let r):
            if let key, r == .badTag || r == .malformedAnswer {
                if bad.count >= policy.badCacheLimit { bad.removeAll(keepingCapacity: true) }
                bad[key] = r
            }
            return rejected(r, at: report.timestamp)
        }
    }

    /// Drops cached good ballots of questions that are no longer open. Call after closing a question:
    /// the cache then holds what the open questions heard, bounded by the room rather than by the
    /// length of the lecture. A voter still advertising a closed question's ballot costs one more
    /// verification, after which its repeats are cache hits again.
    public mutating func forgetClosedQuestions() {
        let open = tally.openQuestions
        good = good.filter { open.contains($0.value.question) }
    }

    /// Ingests a batch of reports.
    public mutating func ingest(contentsOf reports: some Sequence<AdvertisementReport>) {
        for r in reports { _ = ingest(r) }
    }

    /// Ingests a GATT ballot value read from `address` (the 142-byte signed ballot). It counts as read
    /// over GATT with the key that signed it (``BallotProof/signed(_:)``); the tally decides whether
    /// that verifies it.
    public mutating func ingestGATT(_ value: [UInt8], from address: DeviceAddress, at time: RadioInstant) -> IngestResult {
        stats.reports += 1
        if time > now { now = time }
        let result = value.withUnsafeBytes { verifyGATT($0, address: address, at: time) }
        switch result {
        case .success(let signed):
            let b = signed.ballot
            let proof: BallotProof = VoterPublicKey(signed.publicKey).map { .signed($0) } ?? .advertised
            var previous: VoterRecord?
            let outcome = tally.record(b, from: address, at: time, proof: proof, previous: &previous)
            trust(address, after: outcome)
            return IngestResult(outcome: outcome, ballot: b, previous: previous)
        case .failure(let r):
            return rejected(r, at: time)
        }
    }

    /// Cheap checks, key lookup, rate limit, then tag, answer and signature of a GATT value.
    mutating func verifyGATT(_ p: UnsafeRawBufferPointer, address: DeviceAddress,
                             at t: RadioInstant) -> Result<SignedBallot, Rejection> {
        admitted(p, length: BallotFormat.gattLength, address: address, at: t).flatMap { h, key in
            BallotCodec.verifyGATT(p, header: h, key: key)
        }
    }

    /// Exempts `a` from the shared budget once a ballot it sent was counted (new or changed). An
    /// authentic ballot alone is not enough: anyone can record one and replay it from a fresh address
    /// (a closed question's ballots are no longer cached, so such a replay is verified again, then
    /// rejected as `otherQuestion`), and a repeat of a counted ballot proves nothing either.
    mutating func trust(_ a: DeviceAddress, after outcome: RecordOutcome) {
        guard outcome.changesTotals else { return }
        if trusted.count >= policy.addressLimit { trusted.removeAll(keepingCapacity: true) }
        trusted.insert(a)
    }

    /// Cheap checks, key lookup, rate limit, then the tag and the answer.
    mutating func verify(_ p: UnsafeRawBufferPointer, length: Int, address: DeviceAddress,
                         at t: RadioInstant) -> Result<Ballot, Rejection> {
        admitted(p, length: length, address: address, at: t).flatMap { h, key in
            BallotCodec.verifyAndDecrypt(p, header: h, key: key)
        }
    }

    /// The checks before cryptography, then the rate limit: the header and key of a payload whose
    /// tag may now be checked (counted in `stats.verifications`).
    @inline(__always)
    mutating func admitted(_ p: UnsafeRawBufferPointer, length: Int, address: DeviceAddress,
                           at t: RadioInstant) -> Result<(BallotHeader, BallotKey), Rejection> {
        let checked = BallotCodec.headerAndKey(p, length: length, keyring: keyring)
        guard case .success = checked else { return checked }
        guard admit(address, at: t) else { return .failure(.rateLimited) }
        stats.verifications += 1
        return checked
    }

    /// Takes one verification token for `address`; an untrusted address must also win the admission
    /// draw and take a token from the shared budget.
    mutating func admit(_ address: DeviceAddress, at t: RadioInstant) -> Bool {
        let ns = t.nanoseconds
        if buckets[address] == nil {
            if buckets.count >= nextAddressTrim { forgetIdleAddresses(at: ns) }
            if buckets.count >= policy.addressLimit { buckets.removeAll(keepingCapacity: true) }
        }
        var b = buckets[address] ?? TokenBucket(tokens: policy.perAddressBurst, last: ns)
        b.refill(at: ns, rate: policy.perAddressPerSecond, burst: policy.perAddressBurst)
        guard b.tokens >= 1 else { buckets[address] = b; return false }
        if !trusted.contains(address) {
            let (sec, atto) = policy.admissionWindow.components
            let window = UInt64(max(1, sec * 1_000_000_000 + atto / 1_000_000_000))
            let offeredInWindow = offered.count(at: ns, window: window)
            let allowed = policy.untrustedPerSecond * Double(window) / 1e9
            if Double(offeredInWindow) > allowed, !draws.chance(allowed / Double(offeredInWindow)) {
                buckets[address] = b
                return false
            }
            untrusted.refill(at: ns, rate: policy.untrustedPerSecond, burst: policy.untrustedBurst)
            guard untrusted.tokens >= 1 else { buckets[address] = b; return false }
            untrusted.tokens -= 1
        }
        b.tokens -= 1
        buckets[address] = b
        return true
    }

    /// Drops the rate-limit state of addresses whose bucket has refilled to its burst: such a state
    /// is the same as a new one. Addresses come and go (rotating private addresses, forgers), so
    /// the table holds the addresses active in the last few seconds, not every address ever heard.
    mutating func forgetIdleAddresses(at ns: UInt64) {
        let rate = policy.perAddressPerSecond, burst = policy.perAddressBurst
        buckets = buckets.filter { _, b in
            var b = b
            b.refill(at: ns, rate: rate, burst: burst)
            return b.tokens < burst
        }
        nextAddressTrim = max(1024, 2 * buckets.count)
    }

    mutating func rejected(_ r: Rejection, at t: RadioInstant) -> IngestResult {
        tally.reject(r)
        switch r {
        case .badTag, .unknownVoter, .malformedAnswer, .rateLimited:
            suspiciousTotal += 1
            let second = t.nanoseconds / 1_000_000_000
            if second != windowSecond {
                windowSecond = second
                windowCount = 0
            }
            windowCount += 1
            if windowCount >= policy.alertThreshold {
                alertUntil = t + policy.alertHold
                lastAlert = t
            }
        default:
            break
        }
        return IngestResult(outcome: .rejected(r), ballot: nil)
    }
}

/// A 22-byte advertisement payload as three words, for fast hashing.
struct PayloadKey: Hashable, Sendable {
    var a: UInt64
    var b: UInt64
    var c: UInt64

    @inline(__always)
    init(_ d: [UInt8]) {
        var x: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &x) { dst in
            d.withUnsafeBytes { src in
                dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: src.prefix(24)))
            }
        }
        a = x.0
        b = x.1
        c = x.2
    }
}
