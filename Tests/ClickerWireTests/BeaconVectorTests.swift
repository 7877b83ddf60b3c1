import ClickerWire
import Foundation
import XCTest

/// Checks the beacon vectors of docs/PROTOCOL-VECTORS.md part B (PROTOCOL.md §11.9) (made by docs/vectors.py) against ClickerWire,
/// byte for byte, both directions.
final class BeaconVectorTests: XCTestCase {
    func vectors(_ type: String) throws -> [[String: String]] { try protocolVectors().filter { $0["type"] == type } }

    func key(_ v: [String: String]) throws -> BeaconKey {
        let code = try JoinCode(parsing: try XCTUnwrap(v["join-code"]))
        let secret = pollSecret(code)
        if let s = v["poll-secret"] { XCTAssertEqual(hexString(secret.bytes), s) }
        if let km = v["beacon-key-material"] {
            XCTAssertEqual(hexString(KeyDerivation.beaconKeyMaterial(secret)), km, v["name"] ?? "?")
            // The same key from the material alone.
            let fromMaterial = try XCTUnwrap(BeaconKey(keyMaterial: try XCTUnwrap(hexBytes(km)), voteID: code.voteID))
            XCTAssertEqual(BeaconKey(secret).textDigest([1, 2, 3]), fromMaterial.textDigest([1, 2, 3]))
        }
        return BeaconKey(secret)
    }

    /// The poll's key pair of a signed vector (`key-seed`), checked against its `public-key`; nil for a tagged one.
    func signer(_ v: [String: String]) throws -> BeaconSigner? {
        guard let seed = v["key-seed"] else { return nil }
        let s = try XCTUnwrap(BeaconSigner(seed: try XCTUnwrap(hexBytes(seed))))
        XCTAssertEqual(hexString(s.publicKey.bytes), v["public-key"], v["name"] ?? "?")
        return s
    }

    func testAnchorVector() throws {
        let vs = try vectors("beacon-anchor")
        XCTAssertEqual(vs.count, 1, "PROTOCOL-VECTORS.md lost its anchor vector")
        for v in vs {
            let signer = try XCTUnwrap(try self.signer(v))
            let voteID = try XCTUnwrap(UInt16(try XCTUnwrap(v["vote-id"])))
            XCTAssertEqual(hexString(BeaconAnchor.derive(signer.publicKey, voteID: voteID)), v["anchor"])
            let code = BeaconAnchor.joinCode(voteID: voteID, publicKey: signer.publicKey)
            XCTAssertEqual(code.description, v["join-code"])
            XCTAssertEqual(String(format: "%013llx", code.secret), v["secret"])
            let key = try self.key(v)
            XCTAssertEqual(key.keyMask.map(hexString), v["key-mask"])
            XCTAssertEqual(key.hide(signer.publicKey).map(hexString), v["hidden-key"])
            XCTAssertEqual(key.revealKey(try XCTUnwrap(hexBytes(try XCTUnwrap(v["hidden-key"])))), signer.publicKey)
            XCTAssertTrue(BeaconAnchor.matches(signer.publicKey, code))
            // Another key does not give this code.
            let other = try XCTUnwrap(BeaconSigner(seed: [UInt8](repeating: 7, count: 32)))
            XCTAssertFalse(BeaconAnchor.matches(other.publicKey, code))
        }
    }

    func testStateVectors() throws {
        let vs = try vectors("beacon-state")
        XCTAssertGreaterThanOrEqual(vs.count, 5, "PROTOCOL-VECTORS.md lost its STATE vectors")
        var phases = Set<String>()
        for v in vs {
            let name = v["name"] ?? "?"
            let key = try key(v)
            let mode: BallotMode = v["mode"] == "roster" ? .roster : .anonymous
            let ms = v["interval"] == "stop" ? nil : Int(try XCTUnwrap(v["interval"]?.split(separator: " ").first))
            let interval = try ms.map { try XCTUnwrap(BeaconInterval(milliseconds: $0)) } ?? .stop
            let signer = try self.signer(v)
            let digestBytes = v["text-digest"] == "none" ? nil : try XCTUnwrap(hexBytes(try XCTUnwrap(v["text-digest"])))
            XCTAssertEqual(digestBytes?.count ?? (signer == nil ? 4 : 16), signer == nil ? 4 : 16, name)
            let digest = digestBytes.map { $0.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
            var question: BeaconQuestion?
            if let k = v["kind"] {
                question = BeaconQuestion(number: try XCTUnwrap(UInt8(try XCTUnwrap(v["question"]))),
                                          kind: try XCTUnwrap(QuestionKind(rawValue: k)),
                                          options: try XCTUnwrap(UInt8(try XCTUnwrap(v["options"]))), textDigest: digest,
                                          strongDigest: signer == nil ? nil : digestBytes)
            }
            let poll: BeaconPoll
            switch v["phase"] {
            case "open": poll = .open(try XCTUnwrap(question))
            case "question-closed": poll = .questionClosed(try XCTUnwrap(question))
            default: XCTAssertEqual(v["phase"], "closed", name); XCTAssertNil(question, name); poll = .closed
            }
            phases.insert(v["phase"] ?? "")
            let state = BeaconState(voteID: key.voteID, counter: try XCTUnwrap(UInt32(try XCTUnwrap(v["counter"]))), mode: mode,
                                    poll: poll, interval: interval, hiddenKey: signer.flatMap { key.hide($0.publicKey) })
            let frame = try BeaconCodec.seal(.state(state), key: key, signer: signer)
            XCTAssertEqual(hexString(frame), v["frame"], name)
            XCTAssertEqual(frame.count, signer == nil ? BeaconFormat.stateLength : BeaconFormat.signedStateLength, name)
            let bytes = try XCTUnwrap(hexBytes(try XCTUnwrap(v["frame"])))
            XCTAssertEqual(try BeaconCodec.open(bytes, key: key).get(), .state(state), name)
            if let signer {
                XCTAssertEqual(try BeaconCodec.open(bytes, key: key, publicKey: signer.publicKey).get(), .state(state), name)
                XCTAssertEqual(state.hiddenKey.flatMap(key.revealKey), signer.publicKey, name)
            }
        }
        XCTAssertEqual(phases, ["open", "question-closed", "closed"])
    }

    func testAcksVectors() throws {
        let vs = try vectors("beacon-acks")
        XCTAssertGreaterThanOrEqual(vs.count, 2, "PROTOCOL-VECTORS.md lost its ACKS vectors")
        for v in vs {
            let name = v["name"] ?? "?"
            let key = try key(v)
            let question = try XCTUnwrap(UInt8(try XCTUnwrap(v["question"])))
            let ballots = try XCTUnwrap(v["ballots"]).split(separator: " ").map { b in
                let parts = b.split(separator: "/")
                return (UInt32(parts[0], radix: 16) ?? 0, UInt16(parts[1]) ?? 0)
            }
            let fps = ballots.map { key.fingerprint(voterID: $0.0, question: question, sequence: $0.1) }
            XCTAssertEqual(fps.map(\.description).joined(separator: " "), v["fingerprints"], name)
            let acks = BeaconAcks(counter: try XCTUnwrap(UInt32(try XCTUnwrap(v["counter"]))), question: question, fingerprints: fps)
            let signer = try self.signer(v)
            let frame = try BeaconCodec.seal(.acks(acks), key: key, signer: signer)
            XCTAssertEqual(hexString(frame), v["frame"], name)
            if signer == nil {
                XCTAssertLessThanOrEqual(frame.count, fps.count <= 3 ? BeaconFormat.legacyBudgetWithFlags : BeaconFormat.legacyBudget, name)
            }
            let opened = try signer.map { try BeaconCodec.open(try XCTUnwrap(hexBytes(try XCTUnwrap(v["frame"]))), key: key,
                                                               publicKey: $0.publicKey).get() }
                ?? BeaconCodec.open(try XCTUnwrap(hexBytes(try XCTUnwrap(v["frame"]))), key: key).get()
            XCTAssertEqual(opened, .acks(acks), name)
            // Each listed ballot is acknowledged; its next ballot, and the same ballot for another question, are not.
            for (voter, sequence) in ballots {
                XCTAssertTrue(AckMatcher(key: key, voterID: voter, question: question, sequence: sequence).isAcknowledged(by: acks), name)
                XCTAssertFalse(AckMatcher(key: key, voterID: voter, question: question, sequence: sequence &+ 1).isAcknowledged(by: acks), name)
                XCTAssertFalse(AckMatcher(key: key, voterID: voter, question: question &+ 1, sequence: sequence).isAcknowledged(by: acks), name)
            }
        }
    }

    func testTextVectors() throws {
        let vs = try vectors("beacon-text")
        XCTAssertGreaterThanOrEqual(vs.count, 2, "PROTOCOL-VECTORS.md lost its TEXT vectors")
        for v in vs {
            let name = v["name"] ?? "?"
            let key = try key(v)
            let options = ["a", "b", "c", "d", "e", "f", "g", "h"].compactMap { v["option-\($0)"] }
            let signer = try self.signer(v)
            var numeric: NumericForm?
            if v["kind"] == "numeric" {
                numeric = NumericForm(lowest: try XCTUnwrap(Int16(try XCTUnwrap(v["lowest"]))),
                                      highest: try XCTUnwrap(Int16(try XCTUnwrap(v["highest"]))),
                                      decimals: try XCTUnwrap(Int(try XCTUnwrap(v["decimals"]))))
                XCTAssertNotNil(numeric, name)
            }
            let text = QuestionText(title: try XCTUnwrap(v["title"]), options: options, numeric: numeric)
            let block = try XCTUnwrap(text.block)
            XCTAssertEqual(hexString(block), v["text-block"], name)
            let digest = key.textDigest(block)
            XCTAssertEqual(String(format: "%08x", digest), v["text-digest"], name)
            if let strong = v["strong-digest"] { XCTAssertEqual(hexString(key.strongTextDigest(block)), strong, name) }
            let chunks = try XCTUnwrap(QuestionText.chunks(block, chunkLength: try XCTUnwrap(Int(try XCTUnwrap(v["chunk-length"])))))
            XCTAssertEqual(String(chunks.count), v["pages"], name)
            let first = try XCTUnwrap(UInt32(try XCTUnwrap(v["first-counter"])))
            var assembler = BeaconTextAssembler(digest: digest, strongDigest: signer == nil ? nil : key.strongTextDigest(block),
                                                kind: numeric == nil ? nil : .numeric)
            var result: BeaconTextAssembler.Progress?
            for (i, chunk) in chunks.enumerated() {
                let page = BeaconTextPage(counter: first + UInt32(i), digest: digest, index: UInt8(i), count: UInt8(chunks.count), chunk: chunk)
                let frame = try BeaconCodec.seal(.text(page), key: key, signer: signer)
                XCTAssertEqual(hexString(frame), v["page-\(i)"], "\(name) page \(i)")
                let bytes = try XCTUnwrap(hexBytes(try XCTUnwrap(v["page-\(i)"])))
                let openedFrame = try signer.map { try BeaconCodec.open(bytes, key: key, publicKey: $0.publicKey).get() }
                    ?? BeaconCodec.open(bytes, key: key).get()
                guard case .text(let opened) = openedFrame else { return XCTFail("\(name): page \(i) is not a TEXT frame") }
                XCTAssertEqual(opened, page, name)
                result = assembler.add(opened, key: key)
            }
            XCTAssertEqual(result, .complete(text), name)
        }
    }

    func testBeaconRejectionVectors() throws {
        let vs = try vectors("beacon-rejection")
        XCTAssertGreaterThanOrEqual(vs.count, 15, "PROTOCOL-VECTORS.md lost its beacon rejection vectors")
        var reasons = Set<BeaconRejection>()
        for v in vs {
            let name = v["name"] ?? "?"
            let key = try key(v)
            let expect = try XCTUnwrap(BeaconRejection(rawValue: try XCTUnwrap(v["expect"])), name)
            let bytes = try XCTUnwrap(hexBytes(try XCTUnwrap(v["frame"])))
            let pk = try v["public-key"].map { try XCTUnwrap(BeaconPublicKey(bytes: try XCTUnwrap(hexBytes($0)))) }
            switch pk.map({ BeaconCodec.open(bytes, key: key, publicKey: $0) }) ?? BeaconCodec.open(bytes, key: key) {
            case .success(let f): XCTFail("\(name): accepted \(f)")
            case .failure(let r): XCTAssertEqual(r, expect, name); reasons.insert(r)
            }
        }
        // Every reason the decoder gives has a vector.
        XCTAssertEqual(reasons, Set(BeaconRejection.allCases))
    }
}
