import struct ClickerSim.SplitMix64
import ClickerWire
import XCTest

final class ManufacturerDataTests: XCTestCase {
    let payload: [UInt8] = Array(0..<22)

    /// Marshals a{qv} with ay variants by the D-Bus specification, independently of the decoder.
    func marshal(_ entries: [(UInt16, [UInt8])], bigEndian: Bool) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { bigEndian ? [UInt8(v >> 8), UInt8(v & 0xFF)] : [UInt8(v & 0xFF), UInt8(v >> 8)] }
        func u32(_ v: UInt32) -> [UInt8] {
            let b = [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)]
            return bigEndian ? b : b.reversed()
        }
        func pad(_ out: inout [UInt8], _ n: Int) { while out.count % n != 0 { out.append(0) } }
        var body: [UInt8] = [0, 0, 0, 0]
        pad(&body, 8)
        let start = body.count
        for (company, data) in entries {
            pad(&body, 8)
            body += u16(company)
            body += [2, UInt8(ascii: "a"), UInt8(ascii: "y"), 0]
            pad(&body, 4)
            body += u32(UInt32(data.count)) + data
        }
        let len = u32(UInt32(body.count - start))
        body.replaceSubrange(0..<4, with: len)
        return body
    }

    func testDBusMarshalledBothByteOrders() throws {
        for be in [false, true] {
            let bytes = marshal([(0x004C, [1, 2, 3]), (0xFFFF, payload)], bigEndian: be)
            let list = try ManufacturerData.entries(dbusMarshalled: bytes, bigEndian: be).get()
            XCTAssertEqual(list.map(\.companyID), [0x004C, 0xFFFF])
            XCTAssertEqual(list.map(\.data), [[1, 2, 3], payload])
            XCTAssertEqual(ManufacturerData.ballotPayload(from: list), .success(payload))
            // Every truncation is an error, never a trap.
            for n in 0..<bytes.count {
                if case .success(let l) = ManufacturerData.entries(dbusMarshalled: Array(bytes.prefix(n)), bigEndian: be) {
                    XCTFail("truncated to \(n) accepted: \(l.count) entries")
                }
            }
        }
        var bad = marshal([(0xFFFF, payload)], bigEndian: false)
        bad[12] = UInt8(ascii: "s")
        XCTAssertEqual(ManufacturerData.entries(dbusMarshalled: bad).map(\.count), .failure(.unexpectedSignature(at: 10)))
        XCTAssertEqual(ManufacturerData.entries(dbusMarshalled: marshal([], bigEndian: false)).map(\.count), .success(0))
    }

    func testRawAdvertisingDataRoundTrip() throws {
        let ad = try XCTUnwrap(ManufacturerData.advertisingData(payload: payload))
        XCTAssertEqual(ad.count, 29)
        XCTAssertEqual(Array(ad.prefix(7)), [0x02, 0x01, 0x06, 0x19, 0xFF, 0xFF, 0xFF])
        let list = try ManufacturerData.entries(advertisingData: ad + [0, 0]).get()
        XCTAssertEqual(list.count, 1)
        XCTAssertEqual(list.first?.data, payload)
        XCTAssertNil(ManufacturerData.advertisingData(payload: Array(repeating: 0, count: 25)))
        XCTAssertEqual(ManufacturerData.entries(advertisingData: [0x05, 0xFF, 1]).map(\.count), .failure(.truncated(at: 0)))
        XCTAssertEqual(ManufacturerData.entries(advertisingData: [0x02, 0xFF, 1]).map(\.count), .failure(.malformed(at: 0)))
    }

    func testPickingOurEntry() {
        XCTAssertEqual(ManufacturerData.ballotPayload(from: [(companyID: UInt16(0x004C), data: [UInt8]([1]))]), .failure(.notOurs))
        XCTAssertEqual(ManufacturerData.ballotPayload(from: [(companyID: UInt16(0xFFFF), data: [UInt8]([1])),
                                                              (companyID: UInt16(0xFFFF), data: [UInt8]([2]))]), .failure(.trailingBytes))
        XCTAssertEqual(ManufacturerData.ballotPayload(from: [0xFFFF: payload, 0x0006: [9]]), .success(payload))
        XCTAssertEqual(ManufacturerData.ballotPayload(from: [UInt16: [UInt8]]()), .failure(.notOurs))
    }

    func testRandomBytesNeverTrap() {
        var rng = SplitMix64(seed: 77)
        for _ in 0..<50_000 {
            let b = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = ManufacturerData.entries(advertisingData: b)
            _ = ManufacturerData.entries(dbusMarshalled: b, bigEndian: Bool.random(using: &rng))
        }
    }

    func testSealerMatchesTheCodec() throws {
        let code = try JoinCode(parsing: "4821-K7QXM-3PF9A")
        let device = try XCTUnwrap(DeviceKey(bytes: Array(0x20..<0x40).map { UInt8($0) }))
        for mode in BallotMode.allCases {
            let s = BallotSealer(secret: pollSecret(code), deviceKey: device, mode: mode)
            let keyring = PollKeyring(secret: pollSecret(code), roster: [device.rosterKey])
            let adv = s.advertisement(question: 3, sequence: 7, answer: .choice(2))
            XCTAssertEqual(try BallotCodec.openAdvertisement(adv, keyring: keyring).get(),
                           s.ballot(question: 3, sequence: 7, answer: .choice(2)))
            XCTAssertEqual(try BallotCodec.openGATT(s.gattValue(question: 3, sequence: 7, answer: .choice(2)), keyring: keyring).get().ballot.voterID,
                           mode == .roster ? device.rosterVoterID(in: pollSecret(code)) : device.anonymousVoterID(in: pollSecret(code)))
        }
    }
}
