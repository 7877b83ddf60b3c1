// The beacon scheme of TimeToCollect: the real tally side (`TallyBeacon`: acknowledgements, load
// estimate, STATE interval, composer) broadcasting on the simulated air, and voters that follow it by
// the rules of docs/PROTOCOL.md §11.10 (the contract between tally and voters).

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization

/// A voter following the beacon, by the contract's rules: it listens (`ScanDutyCycle.fast`) for
/// authentic STATE frames of its poll (newer, not ahead of its clock: `BeaconReplayGuard`); once it
/// has cast and a question is open it advertises its ballot at the STATE interval; when an ACKS frame
/// of that question holds its ballot's fingerprint (`AckMatcher`) it shows "counted" and slows to the
/// keep-alive (10.24 s), never stopping; STATE `stop`, question closed or poll closed stop it.
///
/// TODO: replace with the product's follower in `Sources/Voter` once it lands (it implements the same
/// rules for `clicker-vote`); this model exists so that the benchmark does not wait for it.
struct BeaconFollower {
    let matcher: AckMatcher
    var replay = BeaconReplayGuard()
    var cast = false
    var open = false
    var stateInterval: BeaconInterval = .stop
    var acknowledged = false
    /// The advertising interval it uses now (nil: silent).
    var advertising: Duration?

    init(matcher: AckMatcher) { self.matcher = matcher }

    /// What it should advertise at now.
    var wanted: Duration? {
        guard cast, open, let ms = stateInterval.milliseconds else { return nil }
        return acknowledged ? BeaconInterval.keepAlive : .milliseconds(ms)
    }

    /// Takes an authentic frame heard at `now` (its own monotonic clock); returns true when it now
    /// shows "counted" for the first time.
    mutating func hear(_ frame: BeaconFrame, at now: Duration) -> Bool {
        switch frame {
        case .state(let s):
            guard replay.admit(s, at: now) else { return false }
            switch s.poll {
            case .open(let q):
                open = q.number == matcher.question
                stateInterval = s.interval
            case .questionClosed, .closed:
                open = false
            }
        case .acks(let a):
            if !acknowledged, matcher.isAcknowledged(by: a) {
                acknowledged = true
                return true
            }
        case .text:
            break
        }
        return false
    }
}

/// The tally of the beacon scheme, and its voters.
final class BeaconScheme: TallyScheme {
    let label = "beacon"
    let votersFollowBeacon = true
    let key: BeaconKey
    var tally: TallyBeacon
    let question = BeaconQuestionInfo(number: 1, kind: .single, options: 4)
    var followers: [BeaconFollower] = []
    var radios: [SimulatedPeripheral] = []
    var castAt: [Double] = []
    /// When each voter showed "counted" (virtual seconds).
    var shownAt: [Double?] = []
    var lastPayload: UInt64?
    var lastInterval: Duration?
    var reportsSeen = 0
    /// Frames heard by the voters, filled by one consuming task per voter.
    let inbox = Inbox()
    var listeners: [Task<Void, Never>] = []
    /// Payload rules of the daemon (`PollController.runBeacon`): at most one per 100 ms; a new one
    /// when ballots were counted, or every 250 ms while acknowledgements rotate or the broadcast is fast.
    let gap: UInt64 = 100_000_000
    let refresh: UInt64 = 250_000_000

    init(secret: PollSecret) {
        key = BeaconKey(secret)
        tally = TallyBeacon(key: key, mode: .anonymous, capabilities: .legacy)
    }

    static func fingerprintVoterID(_ i: Int) -> UInt32 { UInt32(i) }

    func start(air: SimulatedAir, central: SimulatedCentral, voters: [SimulatedPeripheral], castAt: [Double]) async throws {
        radios = voters
        self.castAt = castAt
        shownAt = [Double?](repeating: nil, count: voters.count)
        followers = voters.indices.map {
            BeaconFollower(matcher: AckMatcher(key: key, voterID: Self.fingerprintVoterID($0), question: 1, sequence: 1))
        }
        for (i, v) in voters.enumerated() {
            let stream = v.listen(companyID: BallotFormat.companyID, dutyCycle: .fast)
            let inbox = self.inbox
            listeners.append(Task {
                do {
                    for try await r in stream { inbox.box.withLock { $0.frames.append((i, r)) } }
                } catch {}
            })
        }
        try await compose(at: 0, central: central)
    }

    var isFinished: Bool { !shownAt.contains(nil) }

    func step(reports: [(voter: Int, at: UInt64)], now: UInt64, air: SimulatedAir, central: SimulatedCentral) async throws {
        // The tally: every report of a voter is its counted ballot heard (the detector counts the first).
        reportsSeen += reports.count
        for r in reports {
            tally.counted(VoterKey(mode: .anonymous, voterID: Self.fingerprintVoterID(r.voter)), question: 1, sequence: 1, at: r.at)
        }
        // The voters: what they heard in this step, in the air's order.
        let expected = air.statistics.listenerReportsDelivered
        var heard: [(voter: Int, report: AdvertisementReport)] = []
        while true {
            let done = inbox.box.withLock { box -> Bool in
                guard box.taken + box.frames.count >= expected else { return false }
                heard = box.frames
                box.taken += box.frames.count
                box.frames.removeAll(keepingCapacity: true)
                return true
            }
            if done { break }
            await Task.yield()
        }
        heard.sort { $0.report.timestamp < $1.report.timestamp }
        for (i, r) in heard {
            guard case .success(let frame) = BeaconCodec.open(r.data, key: key) else { continue }
            if followers[i].hear(frame, at: .nanoseconds(Int64(r.timestamp.nanoseconds))) {
                shownAt[i] = Double(r.timestamp.nanoseconds) / 1e9
            }
        }
        // Each voter advertises as it decided (a voter casts at its time).
        let seconds = Double(now) / 1e9
        for i in followers.indices {
            if !followers[i].cast, castAt[i] <= seconds { followers[i].cast = true }
            let want = followers[i].wanted
            guard want != followers[i].advertising else { continue }
            followers[i].advertising = want
            let address = radios[i].address
            if let want {
                let payload = votePayload(i, interval: want)
                try air.perform { ctx in try ctx.advertise(address, payload) }
            } else {
                air.perform { ctx in ctx.stopAdvertising(address) }
            }
        }
        // The tally's payload.
        if let last = lastPayload, now < last + gap { return }
        let due = tally.hasPending || lastPayload.map { now >= $0 + refresh } ?? true
        let refreshing = tally.composer.acknowledgementsInRotation > 0 || lastInterval == tally.tuning.composer.fastInterval
        if tally.hasPending || (due && refreshing) { try await compose(at: now, central: central) }
    }

    func compose(at now: UInt64, central: SimulatedCentral) async throws {
        let p = tally.payload(.open(question), tick: UInt32(now / 10_000_000) + 1, at: now)
        try await central.broadcast(p)
        if debugBeacon {
            let shown = shownAt.compactMap { $0 }.count, loud = followers.filter { $0.advertising != nil && !$0.acknowledged }.count
            print("t=\(Double(now) / 1e9) interval=\(tally.interval) frames=\(p.frames.count) rotation=\(tally.composer.acknowledgementsInRotation) acked=\(tally.acknowledged) shown=\(shown) loud=\(loud) reports=\(reportsSeen) est=\(tally.estimator.repeats)/\(tally.estimator.events)")
        }
        lastPayload = now
        lastInterval = p.interval
    }

    func finish() {
        for l in listeners { l.cancel() }
    }

    /// "Counted" shown, seconds after the tally first heard (counted) each voter; nil: never shown.
    func shownDelays(counted: [Double?]) -> [Double?] {
        zip(counted, shownAt).map { c, s in
            guard let c else { return nil }
            return s.map { max(0, $0 - c) }
        }
    }
}

let debugBeacon = ProcessInfo.processInfo.environment["TTC_DEBUG_BEACON"] != nil

/// What the voters heard, from their listening tasks to the benchmark's loop.
final class Inbox: Sendable {
    let box = Mutex<(frames: [(voter: Int, report: AdvertisementReport)], taken: Int)>(([], 0))
}
