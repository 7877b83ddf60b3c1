import ClickerWire
import XCTest

/// Checks every test vector of docs/PROTOCOL.md §8 against ClickerWire, both directions.
final class ProtocolVectorTests: XCTestCase {
    func testBallotVectorsSealAndOpen() throws {
        let vectors = try protocolVectors().filter { $0["advertisement"] != nil && $0["expect"] == nil }
        XCTAssertGreaterThanOrEqual(vectors.count, 7, "PROTOCOL.md lost its ballot vectors")
        for v in vectors {
            let name = v["name"] ?? "?"
            let code = try JoinCode(parsing: try XCTUnwrap(v["join-code"]))
            XCTAssertEqual(code.description, v["join-code"], name)
            let device = try XCTUnwrap(DeviceKey(bytes: try XCTUnwrap(hexBytes(try XCTUnwrap(v["device-key"])))))
            let mode: BallotMode = v["mode"] == "roster" ? .roster : .anonymous
            let km = mode == .anonymous ? KeyDerivation.pollKeyMaterial(code)
                : KeyDerivation.rosterKeyMaterial(deviceKey: device, code: code)
            XCTAssertEqual(hexString(km), v["key-material"], name)
            let voter = try XCTUnwrap(UInt32(try XCTUnwrap(v["voter-id"]), radix: 16))
            if name.hasPrefix("anonymous") {
                XCTAssertEqual(device.anonymousVoterID(for: code), voter, name)
            }
            if mode == .roster {
                XCTAssertEqual(device.rosterVoterID(for: code), voter, name)
                XCTAssertEqual(device.enrollmentCode.description, v["enrollment-code"], name)
            }
            let answer = try Answer(parsing: try XCTUnwrap(v["answer"]))
            XCTAssertEqual(answer.description, v["answer"], name)
            let w = answer.wireBytes
            XCTAssertEqual(hexString([w.0, w.1, w.2]), v["answer-bytes"], name)
            let ballot = Ballot(mode: mode, voteID: code.voteID, question: try XCTUnwrap(UInt8(try XCTUnwrap(v["question"]))),
                                voterID: voter, sequence: try XCTUnwrap(UInt16(try XCTUnwrap(v["sequence"]))), answer: answer)
            let key = mode == .anonymous ? BallotKey.anonymous(code) : BallotKey.roster(deviceKey: device, joinCode: code)
            XCTAssertEqual(hexString(BallotCodec.sealAdvertisement(ballot, key: key)), v["advertisement"], name)
            XCTAssertEqual(hexString(BallotCodec.sealGATT(ballot, key: key)), v["gatt"], name)

            let keyring = PollKeyring(joinCode: code, roster: mode == .roster ? [device] : [])
            let adv = try XCTUnwrap(hexBytes(try XCTUnwrap(v["advertisement"])))
            let gatt = try XCTUnwrap(hexBytes(try XCTUnwrap(v["gatt"])))
            XCTAssertEqual(adv.count, BallotFormat.advertisementLength)
            XCTAssertEqual(gatt.count, BallotFormat.gattLength)
            XCTAssertEqual(try BallotCodec.openAdvertisement(adv, keyring: keyring).get(), ballot, name)
            XCTAssertEqual(try BallotCodec.openGATT(gatt, keyring: keyring).get(), ballot, name)
        }
    }

    func testRejectionVectors() throws {
        let vectors = try protocolVectors().filter { $0["expect"] != nil }
        XCTAssertGreaterThanOrEqual(vectors.count, 10, "PROTOCOL.md lost its rejection vectors")
        var reasons = Set<Rejection>()
        for v in vectors {
            let name = v["name"] ?? "?"
            let code = try JoinCode(parsing: try XCTUnwrap(v["join-code"]))
            let keyring = PollKeyring(joinCode: code)
            let expect = try XCTUnwrap(Rejection(rawValue: try XCTUnwrap(v["expect"])), name)
            let result: Result<Ballot, Rejection>
            if let adv = v["advertisement"] {
                result = BallotCodec.openAdvertisement(try XCTUnwrap(hexBytes(adv)), keyring: keyring)
            } else {
                result = BallotCodec.openGATT(try XCTUnwrap(hexBytes(try XCTUnwrap(v["gatt"]))), keyring: keyring)
            }
            switch result {
            case .success(let b): XCTFail("\(name): accepted \(b)")
            case .failure(let r): XCTAssertEqual(r, expect, name); reasons.insert(r)
            }
        }
        // Every wire-level reason has a vector.
        let wire: Set<Rejection> = [.notOurs, .unknownVersion, .unknownMode, .truncated, .trailingBytes,
                                    .otherVoteID, .unknownVoter, .badTag, .malformedAnswer]
        XCTAssertEqual(reasons, wire)
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
    /// PROTOCOL.md. Needs python3 on PATH; fails (does not skip) without it.
    func testIndependentReferenceImplementationAgrees() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", root.appendingPathComponent("docs/vectors.py").path, "--check",
                       root.appendingPathComponent("docs/PROTOCOL.md").path]
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
