import struct ClickerTransport.SplitMix64
import ClickerWire
import XCTest

/// The beacon frames of docs/PROTOCOL.md §11: authentication, replay, totality, sizes, text reassembly.
final class BeaconTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-K7QXM-3PF9A")  // constant, known good
    lazy var key = BeaconKey(pollSecret(code))
    /// A poll key pair for the signed forms (the join code need not commit to it here: the codec does not check the anchor).
    let signer = BeaconSigner(seed: (0..<32).map { UInt8(200 - $0) })!

    /// The signed form of every sample frame, with the hidden key a signed STATE carries.
    func signedSamples() throws -> [[UInt8]] {
        try sampleFrames(key).compactMap { f -> [UInt8]? in
            switch f {
            case .state(var s):
                s.hiddenKey = key.hide(signer.publicKey)
                if case .open(var q) = s.poll, let d = q.textDigest {
                    q.strongDigest = [UInt8(d >> 24), UInt8(truncatingIfNeeded: d >> 16), UInt8(truncatingIfNeeded: d >> 8), UInt8(truncatingIfNeeded: d)] + Array(repeating: 7, count: 12)
                    s.poll = .open(q)
                }
                return try BeaconCodec.seal(.state(s), key: key, signer: signer)
            case .acks(let a):
                guard a.fingerprints.count <= BeaconFormat.signedFingerprints(fitting: BeaconFormat.maxFrameLength) else { return nil }
                return try BeaconCodec.seal(f, key: key, signer: signer)
            case .text(let t):
                guard t.chunk.count <= BeaconFormat.signedChunkLength(fitting: BeaconFormat.maxFrameLength) else { return nil }
                return try BeaconCodec.seal(f, key: key, signer: signer)
            }
        }
    }

    /// One frame of each kind and shape, sealed with `key`.
    func sampleFrames(_ key: BeaconKey, counter: UInt32 = 100) throws -> [BeaconFrame] {
        let q = BeaconQuestion(number: 3, kind: .multi, options: 6, textDigest: 0x1234_5678)
        let states: [BeaconPoll] = [.open(q), .questionClosed(BeaconQuestion(number: 4, kind: .numeric, options: 0)), .closed]
        var frames = states.enumerated().map { i, p in
            BeaconFrame.state(BeaconState(voteID: key.voteID, counter: counter + UInt32(i), mode: i == 1 ? .roster : .anonymous,
                                          poll: p, interval: BeaconInterval(milliseconds: 60) ?? .stop))
        }
        for k in [1, 3, 4, BeaconFormat.maxFingerprints] {
            let fps = (0..<k).map { key.fingerprint(voterID: UInt32($0) &* 0x9E37_79B9, question: 3, sequence: UInt16($0 + 1)) }
            frames.append(.acks(BeaconAcks(counter: counter + 10 + UInt32(k), question: 3, fingerprints: fps)))
        }
        for c in [1, 8, BeaconFormat.maxChunkLength] {
            frames.append(.text(BeaconTextPage(counter: counter + 100 + UInt32(c), digest: 0x1234_5678, index: 0, count: 2,
                                               chunk: (0..<c).map { UInt8(truncatingIfNeeded: $0 &* 7) })))
        }
        return frames
    }

    func testSealedFramesOpen() throws {
        for f in try sampleFrames(key) {
            XCTAssertEqual(try BeaconCodec.open(try BeaconCodec.seal(f, key: key), key: key).get(), f)
        }
    }

    /// A beacon sealed with the key of another join code (same vote ID, other secret) is rejected
    /// as `badTag`; one of another vote ID, STATE as `otherVoteID`, ACKS and TEXT as `badTag`.
    func testABeaconOfAnotherJoinCodeIsRejected() throws {
        for other in ["4821-K7QXM-3PF9B", "1234-K7QXM-3PF9A"] {
            let otherCode = try JoinCode(parsing: other)
            let forger = BeaconKey(pollSecret(otherCode))
            for f in try sampleFrames(forger) {
                var g = f
                if case .state(var s) = f { s.voteID = code.voteID; g = .state(s) }   // claims our poll
                XCTAssertEqual(try BeaconCodec.open(try BeaconCodec.seal(f, key: forger), key: forger).get(), f, "its own key opens it")
                let bytes = try BeaconCodec.seal(g, key: forger)
                XCTAssertEqual(BeaconCodec.open(bytes, key: key), .failure(.badTag), "\(other) \(f.kind)")
                if case .state = f {
                    // Unchanged, its vote ID is the other poll's.
                    let mine = try BeaconCodec.seal(f, key: forger)
                    XCTAssertEqual(BeaconCodec.open(mine, key: key),
                                   .failure(otherCode.voteID == code.voteID ? .badTag : .otherVoteID))
                }
            }
        }
    }

    /// A replayed older STATE frame is ignored: the STATE of question 2 after the tally moved to
    /// question 3, and the same frame heard twice. An older ACKS frame only repeats a fact.
    func testAReplayedOlderBeaconIsIgnored() throws {
        func state(_ counter: UInt32, question: UInt8) throws -> [UInt8] {
            try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: counter, mode: .anonymous,
                                                   poll: .open(BeaconQuestion(number: question, kind: .single, options: 4)),
                                                   interval: .stop)), key: key)
        }
        func acks(_ counter: UInt32) throws -> [UInt8] {
            try BeaconCodec.seal(.acks(BeaconAcks(counter: counter, question: 2, fingerprints: [AckFingerprint(value: counter)])), key: key)
        }
        let q2 = try state(500, question: 2), q3 = try state(900, question: 3), a1 = try acks(510), a2 = try acks(520)
        var guardian = BeaconReplayGuard()
        var shown: UInt8?
        var now = Duration.zero
        func hear(_ bytes: [UInt8]) throws -> Bool {
            let f = try BeaconCodec.open(bytes, key: key).get()
            guard case .state(let s) = f else { return true }   // ACKS and TEXT state lasting facts
            guard guardian.admit(s, at: now) else { return false }
            if case .open(let q) = s.poll { shown = q.number }
            return true
        }
        XCTAssertTrue(try hear(q2))
        XCTAssertTrue(try hear(a1))
        now += .seconds(4)
        XCTAssertTrue(try hear(q3))
        XCTAssertEqual(shown, 3)
        XCTAssertFalse(try hear(q2), "the older STATE, replayed, is ignored")
        XCTAssertEqual(shown, 3, "the voter still shows question 3")
        XCTAssertFalse(try hear(q3), "the same frame heard again is not newer")
        XCTAssertTrue(try hear(a2))
        XCTAssertTrue(try hear(a1), "an older ACKS frame only repeats what the tally counted")
        XCTAssertEqual(guardian.newest, 900)
    }

    /// A holder of the join code sends one STATE frame with counter FFFFFFFF ("poll closed"): the
    /// voter ignores it, since the tally's counter cannot have run that far ahead of the voter's
    /// clock. One just inside the lead is accepted, and the tally's own frames win again once the
    /// forger stops, within the lead (5 s).
    func testAStateFrameRunningAheadOfTheClockIsIgnored() throws {
        let key = self.key
        func state(_ counter: UInt32, _ poll: BeaconPoll) throws -> BeaconState {
            let bytes = try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: counter, mode: .anonymous,
                                                                 poll: poll, interval: .stop)), key: key)
            guard case .state(let s) = try BeaconCodec.open(bytes, key: key).get() else { throw BeaconRejection.malformed }
            return s
        }
        let open = BeaconPoll.open(BeaconQuestion(number: 2, kind: .single, options: 4))
        var guardian = BeaconReplayGuard()
        XCTAssertTrue(guardian.admit(try state(1_000, open), at: .seconds(100)))
        XCTAssertFalse(guardian.admit(try state(.max, .closed), at: .seconds(101)), "FFFFFFFF is ignored")
        XCTAssertFalse(guardian.admit(try state(1_000 + 100 + 501, .closed), at: .seconds(101)),
                       "1 s later, 1 s + 5 s + one tick ahead is too far")
        XCTAssertTrue(guardian.admit(try state(1_000 + 100 + 500, .closed), at: .seconds(101)),
                      "a forger can run ahead by the lead, no further")
        // The tally's frames, one per 100 ms from 101 s on, are ignored until its counter passes
        // the forged one: 5 s later, no more.
        var t = Duration.seconds(101), counter: UInt32 = 1_100, firstAccepted: Duration?
        while t < .seconds(120), firstAccepted == nil {
            t += .milliseconds(100); counter += 10
            if guardian.admit(try state(counter, open), at: t) { firstAccepted = t }
        }
        let back = try XCTUnwrap(firstAccepted)
        XCTAssertLessThanOrEqual(back - .seconds(101), .milliseconds(5_100))
    }

    /// The time rule gives way once nothing was accepted for `staleAfter` (10 s): a stale anchor (an old
    /// frame heard first) holds a voter 10 s at most. The price, stated in docs/PROTOCOL.md §11.8: a
    /// holder of the join code who keeps the tally's frames from a voter for 10 s can then get a
    /// far-ahead frame accepted.
    func testTheTimeRuleGivesWayAfterTenSecondsWithoutAnAcceptedFrame() throws {
        let key = self.key
        func state(_ counter: UInt32) throws -> BeaconState {
            let bytes = try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: counter, mode: .anonymous,
                                                                 poll: .closed, interval: .stop)), key: key)
            guard case .state(let s) = try BeaconCodec.open(bytes, key: key).get() else { throw BeaconRejection.malformed }
            return s
        }
        var guardian = BeaconReplayGuard()
        XCTAssertTrue(guardian.admit(try state(1_000), at: .seconds(100)))
        XCTAssertFalse(guardian.admit(try state(1_000 + 3_000), at: .seconds(101)), "30 s ahead, 1 s later")
        XCTAssertFalse(guardian.admit(try state(1_000 + 3_000 + 890), at: .seconds(109) + .milliseconds(900)),
                       "refused frames do not move the anchor: 9.9 s without an accepted frame")
        XCTAssertTrue(guardian.admit(try state(1_000 + 3_000 + 900), at: .seconds(110)), "10 s: the stale anchor gives way")
        XCTAssertFalse(guardian.admit(try state(.max), at: .seconds(111)), "and the time rule holds again from the new anchor")
        XCTAssertFalse(guardian.admit(try state(1_000 + 3_000 + 900), at: .seconds(111)), "not newer")
        var quiet = BeaconReplayGuard()
        XCTAssertTrue(quiet.admit(try state(1_000), at: .seconds(100)))
        XCTAssertTrue(quiet.admit(try state(.max), at: .seconds(110)), "10 s without an accepted frame: any newer one")
    }

    /// Random bytes behind our magic and a beacon type byte (and some fully random), every length
    /// 0…300: never a trap, never accepted, always one of the reasons.
    func testRandomBytesNeverTrapAndAreNeverAccepted() {
        var rng = SplitMix64(seed: 1313)
        var reasons = Set<BeaconRejection>()
        for i in 0..<100_000 {
            let n = i % 301
            var b = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if n >= 2, i % 10 != 0 { b[0] = 0xCB; b[1] = [0x4B, 0x4C, 0x4D, 0x43, 0x44, 0x45][i % 6] }
            if n >= 4, i % 7 == 0, b[1] & 0x07 == 0x03 { b[2] = 0x12; b[3] = 0xD5 }   // our vote ID: up to the tag
            switch BeaconCodec.open(b, key: key, publicKey: signer.publicKey) {
            case .success(let f): XCTFail("random bytes accepted: \(f)")
            case .failure(let r): reasons.insert(r)
            }
        }
        XCTAssertTrue(reasons.isSuperset(of: [.notOurs, .truncated, .oversized, .trailingBytes, .badLength, .otherVoteID, .badTag]),
                      "\(reasons)")
    }

    func testEverySingleBitFlipIsRejected() throws {
        for f in try sampleFrames(key) {
            let bytes = try BeaconCodec.seal(f, key: key)
            for bit in 0..<(bytes.count * 8) {
                var m = bytes
                m[bit / 8] ^= 1 << (bit % 8)
                if case .success(let g) = BeaconCodec.open(m, key: key) { XCTFail("\(f.kind) bit \(bit) flipped, accepted: \(g)") }
            }
        }
        // Signed: a voter holding the poll's key refuses every flipped bit, the signature's included.
        for bytes in try signedSamples() {
            XCTAssertEqual(try BeaconCodec.envelope(bytes, key: key).get().verify(signer.publicKey), true)
            for bit in 0..<(bytes.count * 8) {
                var m = bytes
                m[bit / 8] ^= 1 << (bit % 8)
                if case .success(let g) = BeaconCodec.open(m, key: key, publicKey: signer.publicKey) {
                    XCTFail("signed \(bytes[1]) bit \(bit) flipped, accepted: \(g)")
                }
            }
        }
    }

    func testEveryTruncationAndExtensionIsRejected() throws {
        var rng = SplitMix64(seed: 1314)
        for f in try sampleFrames(key) {
            let bytes = try BeaconCodec.seal(f, key: key)
            for n in 0..<bytes.count {
                if case .success(let g) = BeaconCodec.open(Array(bytes.prefix(n)), key: key) { XCTFail("\(n) bytes accepted: \(g)") }
            }
            for extra in 1...12 {
                let longer = bytes + (0..<extra).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if case .success(let g) = BeaconCodec.open(longer, key: key) { XCTFail("\(extra) more bytes accepted: \(g)") }
            }
        }
        for bytes in try signedSamples() {
            for n in 0..<bytes.count {
                if case .success(let g) = BeaconCodec.open(Array(bytes.prefix(n)), key: key, publicKey: signer.publicKey) {
                    XCTFail("signed: \(n) bytes accepted: \(g)")
                }
            }
            for extra in 1...12 {
                let longer = bytes + (0..<extra).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if case .success(let g) = BeaconCodec.open(longer, key: key, publicKey: signer.publicKey) {
                    XCTFail("signed: \(extra) more bytes accepted: \(g)")
                }
            }
        }
    }

    /// The largest frame of each kind for each budget of §11.1 fits it, and one more entry does not.
    func testFramesFitTheAdvertisingBudgets() throws {
        // 31-byte legacy advertisement: Flags 3, manufacturer AD header 2, company ID 2.
        XCTAssertEqual(BeaconFormat.legacyBudgetWithFlags, 31 - 3 - 2 - 2)
        XCTAssertEqual(BeaconFormat.legacyBudget, 31 - 2 - 2)
        XCTAssertEqual(BeaconFormat.maxFrameLength, 251 - 2 - 2)
        XCTAssertEqual(BeaconFormat.extendedBudgetWithFlags, 251 - 3 - 2 - 2)
        for budget in [BeaconFormat.legacyBudgetWithFlags, BeaconFormat.legacyBudget, BeaconFormat.extendedBudgetWithFlags,
                       BeaconFormat.maxFrameLength] {
            let state = try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: 1, mode: .roster,
                                                                poll: .open(BeaconQuestion(number: 9, kind: .ranked, options: 8, textDigest: 1)),
                                                                interval: .stop)), key: key)
            XCTAssertLessThanOrEqual(state.count, budget)
            let k = BeaconFormat.fingerprints(fitting: budget)
            let fps = (0...k).map { AckFingerprint(value: UInt32($0)) }
            let acks = try BeaconCodec.seal(.acks(BeaconAcks(counter: 1, question: 1, fingerprints: Array(fps.prefix(k)))), key: key)
            XCTAssertLessThanOrEqual(acks.count, budget)
            XCTAssertGreaterThan(acks.count + AckFingerprint.length, budget, "a \(k + 1)th fingerprint would fit \(budget)")
            let c = BeaconFormat.chunkLength(fitting: budget)
            let text = try BeaconCodec.seal(.text(BeaconTextPage(counter: 1, digest: 1, index: 0, count: 1, chunk: Array(repeating: 65, count: c))), key: key)
            XCTAssertEqual(text.count, budget)
        }
        XCTAssertEqual([24, 27, 244, 247].map(BeaconFormat.fingerprints(fitting:)), [3, 4, 58, 59])
        XCTAssertEqual([24, 27, 244, 247].map(BeaconFormat.chunkLength(fitting:)), [8, 11, 228, 231])
        // Signed (extended only): STATE 132 bytes; ACKS 42 / 43 fingerprints; TEXT 164 / 167-byte chunks.
        XCTAssertEqual([244, 247].map(BeaconFormat.signedFingerprints(fitting:)), [42, 43])
        XCTAssertEqual([244, 247].map(BeaconFormat.signedChunkLength(fitting:)), [164, 167])
        for budget in [BeaconFormat.extendedBudgetWithFlags, BeaconFormat.maxFrameLength] {
            let state = try BeaconCodec.seal(.state(BeaconState(voteID: code.voteID, counter: 1, mode: .roster,
                                                                poll: .open(BeaconQuestion(number: 9, kind: .ranked, options: 8, textDigest: 0x0102_0304,
                                                                                           strongDigest: [1, 2, 3, 4] + Array(repeating: 9, count: 12))),
                                                                interval: .stop, hiddenKey: key.hide(signer.publicKey))), key: key, signer: signer)
            XCTAssertEqual(state.count, BeaconFormat.signedStateLength)
            let k = BeaconFormat.signedFingerprints(fitting: budget)
            let acks = try BeaconCodec.seal(.acks(BeaconAcks(counter: 1, question: 1, fingerprints: (0..<k).map { AckFingerprint(value: UInt32($0)) })),
                                            key: key, signer: signer)
            XCTAssertLessThanOrEqual(acks.count, budget)
            XCTAssertGreaterThan(acks.count + AckFingerprint.length, budget)
            let c = BeaconFormat.signedChunkLength(fitting: budget)
            let text = try BeaconCodec.seal(.text(BeaconTextPage(counter: 1, digest: 1, index: 0, count: 1, chunk: Array(repeating: 65, count: c))),
                                            key: key, signer: signer)
            XCTAssertEqual(text.count, budget)
        }
    }

    func testValuesTheFormatCannotCarryAreNotSealed() {
        let bad = BeaconState(voteID: 1, counter: 1, mode: .anonymous,
                              poll: .open(BeaconQuestion(number: 1, kind: .single, options: 9)), interval: .stop)
        XCTAssertThrowsError(try BeaconCodec.seal(.state(bad), key: key))
        let tf = BeaconState(voteID: 1, counter: 1, mode: .anonymous,
                             poll: .questionClosed(BeaconQuestion(number: 1, kind: .truefalse, options: 2)), interval: .stop)
        XCTAssertThrowsError(try BeaconCodec.seal(.state(tf), key: key))
        for n in [0, BeaconFormat.maxFingerprints + 1] {
            XCTAssertThrowsError(try BeaconCodec.seal(.acks(BeaconAcks(counter: 1, question: 1,
                                                                        fingerprints: Array(repeating: AckFingerprint(value: 1), count: n))), key: key))
        }
        for c in [0, BeaconFormat.maxChunkLength + 1] {
            XCTAssertThrowsError(try BeaconCodec.seal(.text(BeaconTextPage(counter: 1, digest: 1, index: 0, count: 1,
                                                                            chunk: Array(repeating: 1, count: c))), key: key))
        }
        XCTAssertThrowsError(try BeaconCodec.seal(.text(BeaconTextPage(counter: 1, digest: 1, index: 2, count: 2, chunk: [1])), key: key))
        XCTAssertNil(BeaconInterval(code: 1))
        XCTAssertNil(BeaconInterval(milliseconds: 10))
        XCTAssertNil(BeaconInterval(milliseconds: 2560))
        XCTAssertNil(BeaconInterval(milliseconds: 105))
        XCTAssertEqual(BeaconInterval(milliseconds: 100)?.code, 10)
    }

    /// PROTOCOL.md §11.3: outside an open question an interval other than `00` is well-formed (a receiver
    /// reads it as stop), and bit 4 with a zero digest is well-formed.
    func testAnIntervalOutsideAnOpenQuestionAndAZeroDigestAreWellFormed() throws {
        let interval = try XCTUnwrap(BeaconInterval(milliseconds: 720))
        for poll in [BeaconPoll.closed, .questionClosed(BeaconQuestion(number: 2, kind: .single, options: 4))] {
            let s = BeaconState(voteID: key.voteID, counter: 9, mode: .anonymous, poll: poll, interval: interval)
            let bytes = try BeaconCodec.seal(.state(s), key: key)
            XCTAssertEqual(bytes[11], 72)
            XCTAssertEqual(try BeaconCodec.open(bytes, key: key).get(), .state(s))
        }
        let zero = BeaconQuestion(number: 2, kind: .single, options: 4, textDigest: 0)
        let s = BeaconState(voteID: key.voteID, counter: 9, mode: .anonymous, poll: .open(zero), interval: interval)
        let bytes = try BeaconCodec.seal(.state(s), key: key)
        XCTAssertEqual(bytes[9] & 0x10, 0x10)
        XCTAssertEqual(Array(bytes[12..<16]), [0, 0, 0, 0])
        XCTAssertEqual(try BeaconCodec.open(bytes, key: key).get(), .state(s))
    }

    func testBeaconFramesAreToldFromBallotsByTheirFirstTwoBytes() throws {
        let ballot = try XCTUnwrap(hexBytes("cb2012d5010502b8080001998a9a2749ece8f0076fbf"))
        XCTAssertFalse(BeaconFormat.isBeacon(ballot))
        XCTAssertEqual(BeaconCodec.open(ballot, key: key), .failure(.notABeacon))
        for f in try sampleFrames(key) {
            let bytes = try BeaconCodec.seal(f, key: key)
            XCTAssertTrue(BeaconFormat.isBeacon(bytes))
            // A ballot decoder gives a version-4 beacon frame `unknownVersion`.
            XCTAssertEqual(BallotCodec.openAdvertisement(bytes, keyring: PollKeyring(secret: pollSecret(code))), .failure(.unknownVersion))
        }
        for bytes in try signedSamples() { XCTAssertTrue(BeaconFormat.isBeacon(bytes)) }
        XCTAssertFalse(BeaconFormat.isBeacon([0xCB]))
        XCTAssertFalse(BeaconFormat.isBeacon([0xCB, 0x3B]))
        XCTAssertFalse(BeaconFormat.isBeacon([0xCB, 0x4E]))
        // Version 3's frames are still dropped before a tally's ballot decoder, and a version-4 voter ignores them.
        XCTAssertTrue(BeaconFormat.isBeacon([0xCB, 0x2B]))
        XCTAssertEqual(BeaconCodec.open([0xCB, 0x2B] + Array(repeating: 0, count: 22), key: key), .failure(.unknownVersion))
    }
}
