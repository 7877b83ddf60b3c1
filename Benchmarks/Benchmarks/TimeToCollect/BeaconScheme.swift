// The beacon scheme of TimeToCollect: the real tally side (`TallyBeacon`: acknowledgements, load
// estimate, STATE interval, composer) broadcasting on the simulated air, and the real voter side
// (`Voter.BeaconFollower`, what `clicker-vote` runs: docs/PROTOCOL.md §11.10) following it.

import ClickerSim
import ClickerTally
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
import Voter

/// The tally of the beacon scheme, and its voters.
final class BeaconScheme: TallyScheme {
    let votersFollowBeacon = true
    /// The tally broadcasts extended advertising (58 fingerprints a frame) instead of legacy frames.
    let extendedBroadcast: Bool
    let key: BeaconKey
    /// The poll's beacon key pair (signed extended frames, version 4); nil: tagged frames (version 3).
    let signer: BeaconSigner?
    var tally: TallyBeacon
    let roster: Int?
    /// The interval each payload announced, and when (to count the changes: each restarts the voters).
    var announced: [(at: UInt64, interval: BeaconInterval)] = []
    /// The question counted: number 1, or 2 after a question of ``priorRoom`` voters.
    let question: BeaconQuestionInfo
    /// Voters counted on an earlier question of the poll (the tally's room when this one opens).
    let priorRoom: Int
    /// Voters 0..<enrolled are on the roster; the tally counts no ballot of the others.
    let enrolled: Int
    var followers: [BeaconFollower] = []
    /// What each voter's radio advertises now (the follower's last wish that was carried out).
    var advertising: [BeaconFollower.Advertising] = []
    /// When each voter's wishes go on the air: clicker-vote's rule, a ballot starts at a random moment
    /// of its interval (the air starts an advertisement at once, as a controller does).
    var starts: [StaggeredStart] = []
    let staggered: Bool
    var answered: [Bool] = []
    var radios: [SimulatedPeripheral] = []
    var castAt: [Double] = []
    /// When each voter showed "counted" (virtual seconds).
    var shownAt: [Double?] = []
    var lastPayload: UInt64?
    var lastInterval: Duration?
    var reportsSeen = 0
    /// What following the beacon cost the voters in this round.
    var cost = VoterCost()
    /// Frames heard by the voters, filled by one consuming task per voter.
    let inbox = Inbox()
    var listeners: [Task<Void, Never>] = []
    /// Payload rules of the daemon (`PollController.runBeacon`): at most one per 100 ms; a new one
    /// when ballots were counted, every 250 ms while acknowledgements rotate or the broadcast is fast,
    /// and at least once a second (`PollController.stateRefresh`), checked on the 250 ms tick.
    let gap: UInt64 = 100_000_000
    let refresh: UInt64 = 250_000_000
    let stateRefresh: UInt64 = 1_000_000_000

    /// `roster`: the students of a roster poll, its tally's room (``TallyBeacon/roomLimit``): voters
    /// 0..<roster. The voters beyond it are devices not on the roster that follow the beacon as
    /// `clicker-vote --roster` does: the tally rejects their ballots (an unregistered device, §8), so it
    /// never counts or acknowledges them, and they keep advertising at the STATE interval. The voters
    /// stay anonymous here otherwise, since a roster changes nothing else the beacon does.
    /// `staggered`: each voter starts a ballot at a random moment of its interval, as clicker-vote does
    /// (``StaggeredStart``); false: at once, on the STATE frame that asked for it.
    init(secret: PollSecret, extended: Bool = false, priorRoom: Int = 0, roster: Int? = nil, staggered: Bool = true,
         signed: Bool = true) {
        self.staggered = staggered
        key = BeaconKey(secret)
        extendedBroadcast = extended
        enrolled = roster ?? .max
        self.priorRoom = priorRoom
        question = BeaconQuestionInfo(number: priorRoom > 0 ? 2 : 1, kind: .single, options: 4)
        // Version 4: extended frames are signed by the poll's key pair. The voters are handed its public
        // key (each would check it against the join code once, one scrypt, before its first signed STATE).
        signer = signed ? BeaconSigner(seed: (0..<32).map { UInt8($0) }) : nil
        self.roster = roster
        tally = TallyBeacon(key: key, mode: .anonymous, capabilities: extended ? .extended : .legacy, roomLimit: roster,
                            signer: signer)
    }

    /// The tally for the radio's capabilities (what a frame costs on its air), with question 1 behind it
    /// when there is one.
    func startTally(_ capabilities: BroadcastCapabilities) {
        tally = TallyBeacon(key: key, mode: .anonymous, capabilities: capabilities, roomLimit: roster, signer: signer)
        guard priorRoom > 0 else { return }
        // Question 1, before t = 0: `priorRoom` other voters counted and acknowledged.
        let first = BeaconQuestionInfo(number: 1, kind: .single, options: 4)
        for v in 0..<priorRoom {
            tally.counted(VoterKey(mode: .anonymous, voterID: UInt32(1_000_000 + v)), question: 1, sequence: 1, at: 0)
        }
        _ = tally.payload(.open(first), tick: 0, at: 0)
    }

    static func fingerprintVoterID(_ i: Int) -> UInt32 { UInt32(i) }
    /// Every ballot of the benchmark is its voter's first: sequence 1.
    static let sequence: UInt16 = 1

    func start(air: SimulatedAir, central: any BroadcasterTransport, voters: [SimulatedPeripheral], castAt: [Double]) async throws {
        radios = voters
        self.castAt = castAt
        startTally(try await central.broadcastCapabilities())
        shownAt = [Double?](repeating: nil, count: voters.count)
        followers = voters.indices.map {
            BeaconFollower(key: key, mode: .anonymous, voterID: Self.fingerprintVoterID($0), now: .zero,
                           publicKey: extendedBroadcast ? signer?.publicKey : nil)
        }
        advertising = [BeaconFollower.Advertising](repeating: .silent, count: voters.count)
        // Seeded from each radio's address, which the round's seed chose.
        starts = voters.map { v in staggered ? StaggeredStart(seed: v.address.rawValue) : .immediate }
        answered = [Bool](repeating: false, count: voters.count)
        for (i, v) in voters.enumerated() {
            let stream = v.listen(companyID: BallotFormat.companyID, dutyCycle: BeaconFollower.listening)
            let inbox = self.inbox
            listeners.append(Task {
                do {
                    for try await r in stream { inbox.box.withLock { $0.frames.append((i, r)) } }
                } catch {}
            })
        }
        try await compose(at: 0, central: central)
    }

    /// Every voter on the roster shows "counted" (the others never can).
    var isFinished: Bool { !shownAt.prefix(enrolled).contains(nil) }

    func step(reports: [(voter: Int, at: UInt64)], now: UInt64, air: SimulatedAir, central: any BroadcasterTransport) async throws {
        // The tally: every report of a voter is its counted ballot heard (the detector counts the first).
        reportsSeen += reports.count
        for r in reports {
            guard r.voter < enrolled else {
                tally.heardUncountable(voterID: Self.fingerprintVoterID(r.voter), question: question.number, at: r.at)
                continue
            }
            tally.counted(VoterKey(mode: .anonymous, voterID: Self.fingerprintVoterID(r.voter)), question: question.number,
                          sequence: Self.sequence, at: r.at)
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
        let c0 = threadCPUNanoseconds()
        for (i, r) in heard {
            let wasCounted = followers[i].isCounted
            followers[i].hear(r.data, at: .nanoseconds(Int64(r.timestamp.nanoseconds)))
            if !wasCounted, followers[i].isCounted { shownAt[i] = Double(r.timestamp.nanoseconds) / 1e9 }
        }
        cost.followerCPU += threadCPUNanoseconds() - c0
        cost.framesHeard += heard.count
        cost.seconds = Double(now) / 1e9
        cost.voterPDUs = air.statistics.pdusTransmitted
        // Each voter answers at its cast time and advertises what its follower asks for; its clock ticks
        // (clicker-vote ticks every 500 ms and on every frame it cannot open; here every step).
        let seconds = Double(now) / 1e9
        for i in followers.indices {
            followers[i].tick(at: .nanoseconds(Int64(now)))
            if !answered[i], castAt[i] <= seconds {
                // Before the question is open the follower keeps the answer for it.
                followers[i].answer(.choice(UInt8(i % Int(question.options))))
                answered[i] = true
            }
            let want = starts[i].update(followers[i].advertising, at: .nanoseconds(Int64(now)))
            guard want != advertising[i] else { continue }
            advertising[i] = want
            let address = radios[i].address
            switch want {
            case .ballot(_, _, let generation, let interval):
                followers[i].sealed(generation: generation, sequence: Self.sequence)
                let payload = votePayload(i, interval: interval)
                try air.perform { ctx in try ctx.advertise(address, payload) }
            case .silent:
                air.perform { ctx in ctx.stopAdvertising(address) }
            }
        }
        // The tally's payload.
        if let last = lastPayload, now < last + gap { return }
        let due = tally.hasPending || lastPayload.map { now >= $0 + refresh } ?? true
        let refreshing = tally.composer.acknowledgementsInRotation > 0 || lastInterval == tally.tuning.composer.fastInterval
            || lastPayload.map { now >= $0 + stateRefresh } ?? true
        if tally.hasPending || (due && refreshing) { try await compose(at: now, central: central) }
    }

    func compose(at now: UInt64, central: any BroadcasterTransport) async throws {
        let p = tally.payload(.open(question), tick: UInt32(now / 10_000_000) + 1, at: now)
        try await central.broadcast(p)
        if debugBeacon {
            let shown = shownAt.compactMap { $0 }.count
            let loud = followers.filter { if case .sending = $0.status { true } else { false } }.count
            print("t=\(Double(now) / 1e9) interval=\(tally.interval) frames=\(p.frames.count) rotation=\(tally.composer.acknowledgementsInRotation) acked=\(tally.acknowledged) shown=\(shown) loud=\(loud) reports=\(reportsSeen) est=\(tally.estimator.repeats)/\(tally.estimator.events)")
        }
        lastPayload = now
        lastInterval = p.interval
        if announced.last?.interval != tally.interval { announced.append((now, tally.interval)) }
    }

    /// Changes of the announced interval within the first `seconds` (the first announcement is none).
    func intervalChanges(within seconds: Double) -> Int {
        max(0, announced.filter { Double($0.at) / 1e9 <= seconds }.count - 1)
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

extension BeaconFollower {
    /// Whether the voter shows "counted".
    var isCounted: Bool { if case .counted = status { true } else { false } }
}

/// The voters' cost of following the beacon in one round: the CPU their followers spent on the frames
/// they heard (this machine, one thread), and the PDUs their radios sent.
struct VoterCost {
    var followerCPU: UInt64 = 0
    var framesHeard = 0
    /// Virtual seconds the round ran, and the voters' PDUs sent in that time (3 per advertising event).
    var seconds = 0.0
    var voterPDUs = 0

    static func + (a: Self, b: Self) -> Self {
        VoterCost(followerCPU: a.followerCPU + b.followerCPU, framesHeard: a.framesHeard + b.framesHeard,
                  seconds: a.seconds + b.seconds, voterPDUs: a.voterPDUs + b.voterPDUs)
    }
}
