import ClickerTransport
import ClickerWire
import Voter
import XCTest

/// Attacks on a follower by a classmate who holds the join code (docs/SECURITY.md, the beacon;
/// docs/PROTOCOL.md §11.7, §11.8, version 4), performed at their real parameters: hundreds of forged
/// frames beside the tally's own, on a test clock.
final class BeaconForgeryTests: XCTestCase {
    static let voteID: UInt16 = 4821
    /// The tally's key pair, and the join code that commits to it (two scrypt, once for the class).
    static let signer = BeaconSigner(seed: (0..<32).map { UInt8($0) })!
    static let secret = PollSecret(deriving: BeaconAnchor.joinCode(voteID: voteID, publicKey: signer.publicKey))
    static let key = BeaconKey(secret)
    /// A classmate's own key pair.
    static let forger = BeaconSigner(seed: (0..<32).map { UInt8(100 + $0) })!
    let voterID: UInt32 = 0xCAFE_F00D

    var key: BeaconKey { Self.key }

    /// The tally's counter at `t`: 10 ms ticks since the poll began, plus 1,000.
    func counter(_ t: Duration) -> UInt32 { 1000 + UInt32(t / .milliseconds(10)) }

    func q(_ n: UInt8, _ kind: QuestionKind = .single, text: [UInt8]? = nil) -> BeaconQuestion {
        BeaconQuestion(number: n, kind: kind, options: kind.hasOptions ? 4 : 0, textDigest: text.map { key.textDigest($0) },
                       strongDigest: text.map { key.strongTextDigest($0) })
    }

    /// A signed STATE of the tally, or of `signer` (hiding its own public key).
    func signedState(_ poll: BeaconPoll, counter c: UInt32, signer: BeaconSigner = BeaconForgeryTests.signer) -> [UInt8] {
        let s = BeaconState(voteID: Self.voteID, counter: c, mode: .anonymous, poll: poll,
                            interval: BeaconInterval(milliseconds: 100) ?? .stop, hiddenKey: key.hide(signer.publicKey))
        return try! BeaconCodec.seal(.state(s), key: key, signer: signer)  // valid by construction
    }

    /// A tagged STATE: what anyone with the join code can make.
    func taggedState(_ poll: BeaconPoll, counter c: UInt32, key k: BeaconKey) -> [UInt8] {
        let s = BeaconState(voteID: Self.voteID, counter: c, mode: .anonymous, poll: poll, interval: BeaconInterval(milliseconds: 100) ?? .stop)
        return try! BeaconCodec.seal(s, key: k)  // valid by construction
    }

    func follower() -> BeaconFollower { BeaconFollower(key: key, mode: .anonymous, voterID: voterID, now: .zero) }

    func shows(_ f: BeaconFollower) -> UInt8? {
        switch f.status {
        case .open(let q): q.number
        case .sending, .counted, .notOffered: f.question?.number
        default: nil
        }
    }

    // MARK: Item 2: no ratchet (tagged frames, a poll without a key, or before the key is known)

    /// The hijack of the table: about 700 forged STATE frames in 20 s, each as far ahead as the guard
    /// of version 3 allowed (5 s beyond the last one it took), no longer carry the follower away: the
    /// bound is measured from the anchor. Then a forger that hugs the bound (as far ahead as version 4
    /// allows) holds it only while it sends: within 3 s of its last frame the follower is back on the
    /// tally's question, and stays there.
    func testAFloodOfForgedTaggedStateFramesDoesNotHoldTheFollowerAfterItStops() throws {
        // A poll without a key: tagged frames only. The forger holds the join code, so the same key.
        let legacy = try XCTUnwrap(BeaconKey(keyMaterial: (0..<64).map { UInt8($0) }, voteID: Self.voteID))
        for hugging in [false, true] {
            var f = BeaconFollower(key: legacy, mode: .anonymous, voterID: voterID, now: .zero)
            var forged = UInt32(0), lastForgedAt = Duration.zero, sent = 0
            var backAt: Duration?
            let forgerStops = Duration.seconds(25)
            for ms in stride(from: 0, to: 60_000, by: 4) {
                let t = Duration.milliseconds(ms)
                // The tally: STATE of question 1 every 100 ms.
                if ms % 100 == 0 { f.hear(taggedState(.open(q(1)), counter: counter(t), key: legacy), at: t) }
                // The forger, from 5 s to 25 s: a frame every 28 ms (715 frames), question 2.
                if t >= .seconds(5), t < forgerStops, (ms - 5000) % 28 == 0 {
                    if hugging {
                        // Version 4's most: 5 s beyond the anchor's clock (the anchor: the tally's first frame, at 0).
                        forged = counter(t) + BeaconReplayGuard.lead
                    } else {
                        // Version 3's ratchet: 5 s beyond the last frame taken, plus the time since.
                        forged = forged == 0 ? counter(t) + BeaconReplayGuard.lead
                            : forged + BeaconReplayGuard.lead + UInt32((t - lastForgedAt) / .milliseconds(10))
                    }
                    lastForgedAt = t
                    f.hear(taggedState(.open(q(2)), counter: forged, key: legacy), at: t)
                    sent += 1
                }
                if t > forgerStops {
                    if shows(f) == 1 { if backAt == nil { backAt = t } } else { backAt = nil }
                }
            }
            XCTAssertGreaterThanOrEqual(sent, 700)
            let back = try XCTUnwrap(backAt, "hugging \(hugging): still on the forged question at 60 s")
            XCTAssertLessThanOrEqual(back - forgerStops, .seconds(3), "hugging \(hugging): back on the tally's question after \(back - forgerStops)")
            XCTAssertEqual(shows(f), 1)
        }
    }

    // MARK: Item 1: frames only the tally can make

    /// Hundreds of forged frames of every kind a classmate can make beside the tally's signed ones:
    /// signed with the classmate's own key (hidden in the frame, so it verifies, but the join code does
    /// not commit to it), with a fresh key each time, the tally's frames with one bit flipped, tagged
    /// frames (no downgrade), and signed ACKS acknowledging the voter's ballot. The follower stays on
    /// the tally's question, is acknowledged only by the tally, and runs one anchor check per key.
    func testForgedFramesBesideTheTallysSignedFramesAreRefused() throws {
        var f = follower()
        var forgedByKind = [0, 0, 0, 0, 0]
        var rng = SplitMix64(seed: 36)
        var fingerprint: AckFingerprint?
        var ackedBy: String?
        var n = 0
        var t = Duration.zero
        for step in 0..<1500 {
            t = .milliseconds(20 * step)
            // The tally: a signed STATE of question 1 every 100 ms.
            if step % 5 == 0 { f.hear(signedState(.open(q(1)), counter: counter(t)), at: t) }
            if step == 25 {
                f.answer(.choice(2))
                guard case .ballot(1, .choice(2), let g, _) = f.advertising else { return XCTFail("\(f.advertising)") }
                f.sealed(generation: g, sequence: 9)
                fingerprint = key.fingerprint(voterID: voterID, question: 1, sequence: 9)
            }
            // The forger, from 1 s on, in the four slots of each 100 ms the tally leaves: 1,160 frames.
            guard step >= 50, step % 5 != 0 else { continue }
            let c = counter(t) + 100
            let kind = n % 5
            n += 1
            switch kind {
            case 0:
                // Signed with the classmate's own key, which the frame hides: it verifies, the anchor does not match.
                f.hear(signedState(.open(q(2)), counter: c, signer: Self.forger), at: t)
            case 1:
                // A fresh key every time.
                let s = try XCTUnwrap(BeaconSigner(seed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }))
                f.hear(signedState(.open(q(2)), counter: c, signer: s), at: t)
            case 2:
                // The tally's own frame with one bit flipped, anywhere.
                var real = signedState(.open(q(1)), counter: c)
                let bit = Int.random(in: 0..<(real.count * 8), using: &rng)
                real[bit / 8] ^= 1 << UInt8(bit % 8)
                f.hear(real, at: t)
            case 3:
                // Tagged (unsigned), after signed ones: no downgrade.
                f.hear(taggedState(.open(q(2)), counter: c, key: key), at: t)
            default:
                // Acknowledging the voter's ballot, which a classmate can fingerprint: signed by the classmate, and tagged.
                let acks = BeaconAcks(counter: c, question: 1, fingerprints: [try XCTUnwrap(fingerprint)])
                f.hear(try BeaconCodec.seal(.acks(acks), key: key, signer: Self.forger), at: t)
                f.hear(try BeaconCodec.seal(.acks(acks), key: key), at: t)
            }
            forgedByKind[kind] += 1
            XCTAssertEqual(shows(f), 1, "at \(t): a forged frame of kind \(kind) took the follower")
            if case .counted = f.status, ackedBy == nil { ackedBy = "forged ACKS at \(t)" }
        }
        XCTAssertNil(ackedBy)
        XCTAssertTrue(forgedByKind.allSatisfy { $0 >= 100 }, "\(forgedByKind)")
        XCTAssertGreaterThanOrEqual(f.admission.forgeriesRefused, 500)
        XCTAssertEqual(f.admission.anchorChecks, 1, "one scrypt: the tally's key")
        XCTAssertEqual(f.admission.publicKey, Self.signer.publicKey)
        // The tally's own acknowledgement still counts.
        let fp = try XCTUnwrap(fingerprint)
        f.hear(try BeaconCodec.seal(.acks(BeaconAcks(counter: counter(t), question: 1, fingerprints: [fp])), key: key, signer: Self.signer), at: t)
        XCTAssertEqual(f.status, .counted(.choice(2)))
    }

    /// A classmate who speaks first: 300 signed STATE frames of question 2 in 3 s, each with a fresh
    /// key of its own, before and beside the tally's first frames. The follower checks at most one
    /// key a second, the one heard most often first, and so takes the tally's key within 2 s of its
    /// first frame; the forged question is never shown.
    func testMadeUpKeysBeforeTheTallysFirstFrameCostOneCheckASecond() throws {
        var f = follower()
        var rng = SplitMix64(seed: 7)
        let tallyFrom: Duration = .seconds(2)
        var learnedAt: Duration?
        for ms in stride(from: 0, to: 5000, by: 10) {
            let t = Duration.milliseconds(ms)
            if t < .seconds(3) {
                let s = try XCTUnwrap(BeaconSigner(seed: (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }))
                f.hear(signedState(.open(q(2)), counter: counter(t) + 400, signer: s), at: t)
            }
            if t >= tallyFrom, ms % 100 == 0 { f.hear(signedState(.open(q(1)), counter: counter(t)), at: t) }
            XCTAssertNotEqual(shows(f), 2, "at \(t)")
            if learnedAt == nil, f.admission.publicKey != nil { learnedAt = t }
        }
        let learned = try XCTUnwrap(learnedAt)
        XCTAssertLessThanOrEqual(learned - tallyFrom, .seconds(2))
        XCTAssertEqual(f.admission.publicKey, Self.signer.publicKey)
        XCTAssertLessThanOrEqual(f.admission.anchorChecks, 4, "at most one scrypt a second")
        XCTAssertEqual(shows(f), 1)
    }

    /// Issue 36 #4: forged option texts under the tally's signed STATE. 400 forged pages (tagged ones
    /// naming the real digest, and ones signed by the classmate) carrying the block with options
    /// swapped, before and among the tally's pages: the follower shows the tally's text only.
    func testForgedOptionTextsUnderASignedStateAreRefused() throws {
        let real = QuestionText(title: "Largest planet?", options: ["Mercury", "Venus", "Jupiter", "Mars"])
        let swapped = QuestionText(title: "Largest planet?", options: ["Jupiter", "Venus", "Mercury", "Mars"])
        let block = try XCTUnwrap(real.block), forgedBlock = try XCTUnwrap(swapped.block)
        let digest = key.textDigest(block)
        let chunkLength = BeaconFormat.signedChunkLength(fitting: BeaconFormat.extendedBudgetWithFlags)
        let realChunks = try XCTUnwrap(QuestionText.chunks(block, chunkLength: 8))
        let forgedChunks = try XCTUnwrap(QuestionText.chunks(forgedBlock, chunkLength: 8))
        XCTAssertLessThan(block.count, chunkLength)
        var f = follower()
        var t = Duration.zero
        var forged = 0
        for round in 0..<50 {
            // Forged pages first, every round: tagged with the real digest, and signed by the classmate.
            for (i, c) in forgedChunks.enumerated() {
                let page = BeaconTextPage(counter: counter(t), digest: digest, index: UInt8(i), count: UInt8(forgedChunks.count), chunk: c)
                f.hear(try BeaconCodec.seal(.text(page), key: key), at: t)
                f.hear(try BeaconCodec.seal(.text(page), key: key, signer: Self.forger), at: t)
                forged += 2
            }
            if round % 10 == 0 { f.hear(signedState(.open(q(1, text: block)), counter: counter(t)), at: t) }
            // The tally's pages, one a round.
            let i = round % realChunks.count
            let page = BeaconTextPage(counter: counter(t), digest: digest, index: UInt8(i), count: UInt8(realChunks.count), chunk: realChunks[i])
            f.hear(try BeaconCodec.seal(.text(page), key: key, signer: Self.signer), at: t)
            if let text = f.question?.text { XCTAssertEqual(text, real, "round \(round)") }
            t += .milliseconds(100)
        }
        XCTAssertGreaterThanOrEqual(forged, 400)
        XCTAssertEqual(f.question?.text, real)
        XCTAssertEqual(f.status, .open(.init(beacon: q(1, text: block), text: real)))
    }

    // MARK: Cost

    /// The same signed advertisement, heard again and again, is verified once (the last 64 frames
    /// verified are kept); the CPU per fresh signed frame (tag and Ed25519), per repeat, and per
    /// signature made are printed for docs (a debug build: BoringSSL unoptimised).
    func testRepeatedSignedFramesAreVerifiedOnceAndTheCostIsPrinted() throws {
        var f = follower()
        f.hear(signedState(.open(q(1)), counter: 1000), at: .seconds(1))
        f.answer(.choice(0))
        guard case .ballot(_, _, let g, _) = f.advertising else { return XCTFail("\(f.advertising)") }
        f.sealed(generation: g, sequence: 1)
        let frames = try (0..<200).map { i in
            try BeaconCodec.seal(.acks(BeaconAcks(counter: 2000 + UInt32(i), question: 1,
                                                  fingerprints: (0..<42).map { AckFingerprint(value: UInt32(i * 42 + $0 + 100)) })),
                                 key: key, signer: Self.signer)
        }
        let clock = ContinuousClock()
        let before = f.admission.verifications
        var start = clock.now
        for (i, frame) in frames.enumerated() { f.hear(frame, at: .seconds(2) + .milliseconds(i)) }
        let fresh = (clock.now - start) / frames.count
        XCTAssertEqual(f.admission.verifications - before, frames.count)
        // Repeats of the last 50 (within the cache): no verification.
        start = clock.now
        let repeats = 20_000
        for i in 0..<repeats { f.hear(frames[150 + i % 50], at: .seconds(3) + .milliseconds(i)) }
        let repeated = (clock.now - start) / repeats
        XCTAssertEqual(f.admission.verifications - before, frames.count, "a repeated frame is not verified again")
        XCTAssertEqual(f.status, .sending(.choice(0)))
        start = clock.now
        for i in 0..<200 {
            _ = try BeaconCodec.seal(.acks(BeaconAcks(counter: UInt32(i), question: 1, fingerprints: [AckFingerprint(value: 1)])),
                                     key: key, signer: Self.signer)
        }
        let signing = (clock.now - start) / 200
        print("signed beacon frames (debug build): \(fresh) per fresh frame verified, \(repeated) per repeat, \(signing) per frame signed")
    }

    // MARK: Item 10: numeric questions

    /// The guide's "g in m/s²" question: 9 to 10.5 with 2 decimals. The range and decimals reach the
    /// follower in the question's text block; "9.81" is sent as 981, and "11" is refused with the range.
    func testANumericQuestionsRangeAndDecimalsReachTheFollower() throws {
        let form = try XCTUnwrap(NumericForm(lowest: 900, highest: 1050, decimals: 2))
        let text = QuestionText(title: "g in m/s²", numeric: form)
        let block = try XCTUnwrap(text.block)
        var f = follower()
        f.hear(signedState(.open(q(3, .numeric, text: block)), counter: counter(.seconds(1))), at: .seconds(1))
        // Before the block arrives, an answer waits for the range.
        let early = try XCTUnwrap(f.question)
        XCTAssertTrue(early.awaitsForm)
        XCTAssertThrowsError(try BeaconFollowService.parse("9.81", for: early))
        let chunks = try XCTUnwrap(QuestionText.chunks(block, chunkLength: 8))
        for (i, c) in chunks.enumerated() {
            let page = BeaconTextPage(counter: counter(.seconds(1)) + 1 + UInt32(i), digest: key.textDigest(block), index: UInt8(i),
                                      count: UInt8(chunks.count), chunk: c)
            f.hear(try BeaconCodec.seal(.text(page), key: key, signer: Self.signer), at: .seconds(2))
        }
        let question = try XCTUnwrap(f.question)
        XCTAssertEqual(question.numeric, form)
        XCTAssertEqual(try BeaconFollowService.parse("9.81", for: question), .numeric(981))
        XCTAssertEqual(try BeaconFollowService.parse("10.5", for: question), .numeric(1050))
        XCTAssertThrowsError(try BeaconFollowService.parse("11", for: question)) { e in
            XCTAssertEqual("\(e)", "11 is out of range; this question takes a number with at most 2 decimals from 9.00 to 10.50")
        }
        XCTAssertThrowsError(try BeaconFollowService.parse("9.815", for: question))
        // An answer out of range that reaches the follower anyway is not sent.
        f.answer(.numeric(1100))
        XCTAssertEqual(f.status, .notOffered(.numeric(1100)))
        XCTAssertEqual(f.advertising, .silent)
        f.answer(try BeaconFollowService.parse("9.81", for: question))
        guard case .ballot(3, .numeric(981), _, _) = f.advertising else { return XCTFail("\(f.advertising)") }
    }
}
