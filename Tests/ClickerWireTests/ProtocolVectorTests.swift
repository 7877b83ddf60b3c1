import ClickerWire
import Foundation
import XCTest

/// Checks every test vector of docs/PROTOCOL-VECTORS.md part A (PROTOCOL.md §9), and docs/vectors.json, against ClickerWire, both directions.
final class ProtocolVectorTests: XCTestCase {
    func testBallotVectorsSealAndOpen() throws {
        let vectors = try protocolVectors().filter { $0["type"] == "ballot" }
        XCTAssertGreaterThanOrEqual(vectors.count, 12, "PROTOCOL-VECTORS.md lost its ballot vectors")
        var kinds = Set<UInt8>()
        for v in vectors {
            let name = v["name"] ?? "?"
            let code = try JoinCode(parsing: try XCTUnwrap(v["join-code"]))
            XCTAssertEqual(code.description, v["join-code"], name)
            XCTAssertEqual(code.secretText, v["secret-text"], name)
            let secret = pollSecret(code)
            XCTAssertEqual(hexString(secret.bytes), v["poll-secret"], name)
            let device = try XCTUnwrap(DeviceKey(bytes: try XCTUnwrap(hexBytes(try XCTUnwrap(v["device-key"])))))
            let mode: BallotMode = v["mode"] == "roster" ? .roster : .anonymous
            let km = mode == .anonymous ? KeyDerivation.pollKeyMaterial(secret)
                : KeyDerivation.rosterKeyMaterial(rosterKey: device.rosterKey, secret: secret)
            XCTAssertEqual(hexString(km), v["key-material"], name)
            XCTAssertEqual(hexString(KeyDerivation.signingSeed(deviceKey: device, mode: mode, secret: secret)), v["signing-seed"], name)
            let signingKey = device.signingKey(mode: mode, secret: secret)
            let pk = Array(signingKey.publicKey.rawRepresentation)
            XCTAssertEqual(hexString(pk), v["public-key"], name)
            let voter = try XCTUnwrap(UInt32(try XCTUnwrap(v["voter-id"]), radix: 16))
            switch mode {
            case .anonymous:
                XCTAssertEqual(device.anonymousVoterID(in: secret), voter, name)
                XCTAssertEqual(KeyDerivation.anonymousVoterID(publicKey: pk), voter, name)
            case .roster:
                XCTAssertEqual(device.rosterVoterID(in: secret), voter, name)
                XCTAssertEqual(hexString(device.rosterKey.bytes), v["roster-key"], name)
                XCTAssertEqual(device.enrollmentCode.description, v["enrollment-code"], name)
            }
            let answer = try Answer(parsing: try XCTUnwrap(v["answer"]))
            XCTAssertEqual(answer.description, v["answer"], name)
            let w = answer.wireBytes
            XCTAssertEqual(hexString([w.0, w.1, w.2]), v["answer-bytes"], name)
            kinds.insert(w.0)
            let ballot = Ballot(mode: mode, voteID: code.voteID, question: try XCTUnwrap(UInt8(try XCTUnwrap(v["question"]))),
                                voterID: voter, sequence: try XCTUnwrap(UInt16(try XCTUnwrap(v["sequence"]))), answer: answer)
            let key = mode == .anonymous ? BallotKey.anonymous(secret) : BallotKey.roster(device.rosterKey, secret: secret)
            XCTAssertEqual(hexString(BallotCodec.sealAdvertisement(ballot, key: key)), v["advertisement"], name)
            XCTAssertEqual(hexString(BallotCodec.sealFull(ballot, key: key)), v["full-ballot"], name)
            XCTAssertEqual(hexString(BallotCodec.sealGATT(ballot, key: key, signingKey: signingKey)), v["gatt"], name)
            let sealer = BallotSealer(secret: secret, deviceKey: device, mode: mode)
            XCTAssertEqual(sealer.voterID, voter, name)
            XCTAssertEqual(hexString(sealer.gattValue(question: ballot.question, sequence: ballot.sequence, answer: answer)),
                           v["gatt"], name)

            let keyring = PollKeyring(secret: secret, roster: mode == .roster ? [device.rosterKey] : [])
            let adv = try XCTUnwrap(hexBytes(try XCTUnwrap(v["advertisement"])))
            let gatt = try XCTUnwrap(hexBytes(try XCTUnwrap(v["gatt"])))
            XCTAssertEqual(adv.count, BallotFormat.advertisementLength)
            XCTAssertEqual(gatt.count, BallotFormat.gattLength)
            XCTAssertEqual(try BallotCodec.openAdvertisement(adv, keyring: keyring).get(), ballot, name)
            XCTAssertEqual(try BallotCodec.openGATT(gatt, keyring: keyring).get(), SignedBallot(ballot: ballot, publicKey: pk), name)
        }
        // Every answer kind has a vector: choice, true/false, multi-select, numeric, rankings of 1, 3 and 8.
        XCTAssertTrue(kinds.isSuperset(of: [0x01, 0x02, 0x03, 0x05, 0x41, 0x43, 0x48]), "\(kinds)")
    }

    func testJoinCodeVectors() throws {
        let vectors = try protocolVectors().filter { $0["type"] == "join-code" }
        XCTAssertGreaterThanOrEqual(vectors.count, 2)
        for v in vectors {
            let code = try JoinCode(parsing: try XCTUnwrap(v["input"]))
            XCTAssertEqual(code.description, v["join-code"], v["name"] ?? "?")
            XCTAssertEqual(code.secretText, v["secret-text"], v["name"] ?? "?")
            XCTAssertEqual(hexString(pollSecret(code).bytes), v["poll-secret"], v["name"] ?? "?")
        }
    }

    func testEnrollmentVectors() throws {
        let vectors = try protocolVectors().filter { $0["type"] == "enrollment" }
        XCTAssertGreaterThanOrEqual(vectors.count, 4)
        for v in vectors {
            let name = v["name"] ?? "?"
            let input = try XCTUnwrap(v["input"])
            if let expect = v["expect"] {
                XCTAssertEqual(expect, "versionOne", name)
                XCTAssertThrowsError(try EnrollmentCode(parsing: input), name) {
                    XCTAssertEqual($0 as? EnrollmentCodeError, .versionOne)
                    XCTAssertTrue("\($0)".contains("clicker-vote enroll"), "\($0)")
                }
            } else {
                let e = try EnrollmentCode(parsing: input)
                XCTAssertEqual(hexString(e.rosterKey.bytes), v["roster-key"], name)
                XCTAssertEqual(e.description, v["enrollment-code"], name)
            }
        }
    }

    func testRejectionVectors() throws {
        let vectors = try protocolVectors().filter { $0["type"] == "rejection" }
        XCTAssertGreaterThanOrEqual(vectors.count, 20, "PROTOCOL-VECTORS.md lost its rejection vectors")
        var reasons = Set<Rejection>()
        for v in vectors {
            let name = v["name"] ?? "?"
            let code = try JoinCode(parsing: try XCTUnwrap(v["join-code"]))
            let roster = try v["roster"].map { [try EnrollmentCode(parsing: $0).rosterKey] } ?? []
            let keyring = PollKeyring(secret: pollSecret(code), roster: roster)
            let expect = try XCTUnwrap(Rejection(rawValue: try XCTUnwrap(v["expect"])), name)
            let result: Result<Ballot, Rejection>
            if let adv = v["advertisement"] {
                result = BallotCodec.openAdvertisement(try XCTUnwrap(hexBytes(adv)), keyring: keyring)
            } else {
                result = BallotCodec.openGATT(try XCTUnwrap(hexBytes(try XCTUnwrap(v["gatt"]))), keyring: keyring).map(\.ballot)
            }
            switch result {
            case .success(let b): XCTFail("\(name): accepted \(b)")
            case .failure(let r): XCTAssertEqual(r, expect, name); reasons.insert(r)
            }
        }
        // Every reason the decoder produces has a vector.
        let wire: Set<Rejection> = [.notOurs, .unknownVersion, .unknownMode, .truncated, .trailingBytes,
                                    .otherVoteID, .badSequence, .unknownVoter, .badTag, .malformedAnswer, .badSignature]
        XCTAssertEqual(reasons, wire)
        // Payloads that fail two checks: the vectors show which reason wins.
        XCTAssertGreaterThanOrEqual(vectors.filter { $0["name"]?.hasPrefix("two-") == true }.count, 5)
    }

    /// docs/vectors.json holds exactly the blocks of PROTOCOL-VECTORS.md, in order (the conformance kit).
    func testConformanceKitMatchesTheDocument() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/vectors.json")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        XCTAssertEqual(json?["version"] as? Int, 4)
        let kit = try XCTUnwrap(json?["vectors"] as? [[String: String]])
        let doc = try protocolVectors()
        XCTAssertEqual(kit.count, doc.count, "vectors.json and PROTOCOL-VECTORS.md hold different numbers of vectors")
        for (k, d) in zip(kit, doc) { XCTAssertEqual(k, d, k["name"] ?? "?") }
    }

    func testGATTConstantsMatchDocument() throws {
        XCTAssertEqual(BallotFormat.serviceUUID.description, BallotFormat.serviceUUIDString)
        XCTAssertEqual(BallotFormat.ballotCharacteristicUUID.description, BallotFormat.ballotCharacteristicUUIDString)
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/PROTOCOL.md")
        let doc = try String(contentsOf: url, encoding: .utf8)
        XCTAssertTrue(doc.contains("`\(BallotFormat.serviceUUIDString)`"))
        XCTAssertTrue(doc.contains("`\(BallotFormat.ballotCharacteristicUUIDString)`"))
        // The whole advertisement (flags 3 + header 2 + company 2 + payload) fits legacy 31 bytes.
        XCTAssertLessThanOrEqual(3 + 2 + 2 + BallotFormat.advertisementLength, 31)
    }

    /// The independent Python implementation (docs/vectors.py) recomputes every vector in
    /// PROTOCOL-VECTORS.md. Needs python3 on PATH; fails (does not skip) without it.
    func testIndependentReferenceImplementationAgrees() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", root.appendingPathComponent("docs/vectors.py").path, "--check",
                       root.appendingPathComponent("docs/PROTOCOL-VECTORS.md").path]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        p.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(p.terminationStatus, 0, "python3 docs/vectors.py --check failed (is python3 installed?): \(text)")
        XCTAssertTrue(text.contains("vectors match"), text)
    }
}
