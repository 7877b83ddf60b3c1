import ClickerTransport
@testable import HCI
import Synchronization
import XCTest

/// The beacon over raw HCI, both ways, against the scripted controller: the tally broadcasting while
/// it scans (legacy and extended), the voter listening while it advertises.
final class HCIBeaconBackendTests: XCTestCase {
    let initSequence: [UInt16] = [0x0C03, 0x0C01, 0x2001, 0x1009, 0x2003]
    /// Every legacy advertising and scanning opcode (LE Set Advertising Parameters … LE Set Scan Enable).
    let legacyOpcodes: Set<UInt16> = [0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x200B, 0x200C]

    func legacyData(_ frame: [UInt8]) -> [UInt8] {
        let ad: [UInt8] = [UInt8(3 + frame.count), 0xFF, 0xFF, 0xFF] + frame
        return [0x01, 0x08, 0x20, 0x20, UInt8(ad.count)] + ad + [UInt8](repeating: 0, count: 31 - ad.count)
    }

    func extendedData(_ frame: [UInt8]) -> [UInt8] {
        let ad: [UInt8] = [UInt8(3 + frame.count), 0xFF, 0xFF, 0xFF] + frame
        return [0x01, 0x37, 0x20, UInt8(4 + ad.count), 0x00, 0x03, 0x01, UInt8(ad.count)] + ad
    }

    // MARK: Tally

    func testLegacyBeaconBytesRotationReplacementAndStop() async throws {
        let fake = FakeController()
        let timer = ManualTimer()
        let central = HCICentral(channel: fake, adapter: "hci0", options: .init(clock: RadioClock(timer)))
        let caps = try await central.broadcastCapabilities()
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 27, extended: false, frameSlack: .milliseconds(10),
                                                   minimumFrameTime: .milliseconds(110)))
        XCTAssertEqual(fake.commandOpcodes, initSequence, "features read once; no extended bit, so no length read")

        // A frame too long for legacy advertising is refused before the controller hears of it.
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[UInt8](repeating: 0, count: 28)]))
            XCTFail("a 28-byte frame was accepted")
        } catch TransportError.unsupported {}
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: []))
            XCTFail("no frame was accepted")
        } catch TransportError.unsupported {}
        XCTAssertEqual(fake.written.count, 5)

        let full = [UInt8](repeating: 0xC5, count: 27)
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [full, [4, 5]], interval: .milliseconds(100)))
        let setup = fake.written(after: 5)
        XCTAssertEqual(setup.count, 4)
        let firstAddress = try legacyRandomAddress(setup[0])
        XCTAssertEqual(Array(setup.dropFirst()), [
            // ADV_NONCONN_IND, 100 ms, own address random (0x01), all three channels.
            [0x01, 0x06, 0x20, 0x0F, 0xA0, 0x00, 0xA0, 0x00, 0x03, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0x07, 0x00],
            [0x01, 0x08, 0x20, 0x20, 31, 30, 0xFF, 0xFF, 0xFF] + full,     // 31 octets: no Flags, no padding
            [0x01, 0x0A, 0x20, 0x01, 0x01],
        ])
        // Rotation, every interval + 10 ms: advertising off, a new address, the next frame, on again.
        await fake.wait("rotation timer armed") { _ in timer.waiting == 1 }
        XCTAssertEqual(timer.periods, [.milliseconds(110)])
        timer.fire()
        await fake.wait("second frame") { $0.written.count == 13 }
        var step = fake.written(after: 9)
        XCTAssertEqual(step[0], [0x01, 0x0A, 0x20, 0x01, 0x00])
        let secondAddress = try legacyRandomAddress(step[1])
        XCTAssertEqual(Array(step[2...]), [legacyData([4, 5]), [0x01, 0x0A, 0x20, 0x01, 0x01]])
        await fake.wait("rotation timer armed again") { _ in timer.waiting == 1 }
        timer.fire()
        await fake.wait("first frame again") { $0.written.count == 17 }
        step = fake.written(after: 13)
        let thirdAddress = try legacyRandomAddress(step[1])
        XCTAssertEqual(step[2], [0x01, 0x08, 0x20, 0x20, 31, 30, 0xFF, 0xFF, 0xFF] + full)
        XCTAssertEqual(Set([firstAddress, secondAddress, thirdAddress]).count, 3, "a new address for every frame")
        XCTAssertEqual(central.currentBroadcast?.frame, 0)

        // Scanning goes on beside it, with the legacy commands; this controller takes a new random
        // address while it scans, so the scan is never paused for one.
        let consumer = Task { for try await _ in central.advertisements(companyID: 0xFFFF) {} }
        await fake.wait("scan enabled") { $0.commandOpcodes.last == 0x200C }
        let scanCommands = fake.commandOpcodes.filter { $0 == 0x200C }.count

        // Same interval, one frame: the frame from a new address, and the rotation ends.
        await fake.wait("rotation timer armed") { _ in timer.waiting == 1 }
        let before = fake.written.count
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[9]], interval: .milliseconds(100)))
        XCTAssertEqual(Array(fake.commandOpcodes.dropFirst(before)), [0x200A, 0x2005, 0x2008, 0x200A])
        XCTAssertEqual(fake.written[before + 2], legacyData([9]))
        await fake.wait("rotation cancelled") { _ in timer.cancelled == 1 && timer.waiting == 0 }
        // New interval: disable, address, parameters, data, enable.
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[9]], interval: .milliseconds(250)))
        XCTAssertEqual(Array(fake.commandOpcodes.suffix(5)), [0x200A, 0x2005, 0x2006, 0x2008, 0x200A])
        XCTAssertEqual(Array(fake.written[fake.written.count - 3][4..<8]), [0x90, 0x01, 0x90, 0x01])
        XCTAssertEqual(fake.commandOpcodes.filter { $0 == 0x200C }.count, scanCommands, "the scan was never paused")
        try await central.stopBroadcasting()
        XCTAssertEqual(fake.written.last, [0x01, 0x0A, 0x20, 0x01, 0x00])
        let settled = fake.written.count
        try await central.stopBroadcasting()
        XCTAssertEqual(fake.written.count, settled, "stopBroadcasting is idempotent")
        XCTAssertFalse(fake.commandOpcodes.contains { $0 >= 0x2035 && $0 <= 0x2042 }, "no extended command on a legacy controller")
        consumer.cancel()
        await central.shutdown()
    }

    /// A controller may answer LE Set Random Address with Command Disallowed while scanning (or legacy
    /// advertising) is enabled. Such a controller still gets a new address for every beacon frame,
    /// the scan disabled around it, and the scan's reports still reach the tally.
    func testAControllerThatRefusesANewAddressWhileScanningGetsTheScanPausedAroundIt() async throws {
        let fake = FakeController()
        let enabled = Locked((scan: false, advertising: false))
        fake.state.withLock { $0.statusFor = { op, params in
            enabled.withLock { e in
                switch op {
                case 0x200C: e.scan = params.first == 1; return 0
                case 0x200A: e.advertising = params.first == 1; return 0
                case 0x2005: return e.scan || e.advertising ? 0x0C : 0
                default: return 0
                }
            }
        } }
        let timer = ManualTimer()
        let central = HCICentral(channel: fake, adapter: "hci0", options: .init(clock: RadioClock(timer)))
        let reports = Locked<[AdvertisementReport]>([])
        let consumer = Task { for try await r in central.advertisements(companyID: 0xFFFF) { reports.withLock { $0.append(r) } } }
        await fake.wait("scan enabled") { $0.commandOpcodes.last == 0x200C }

        let before = fake.written.count
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[1], [2]], interval: .milliseconds(100)))
        // Refused once with the scan on, then: scan off, address, scan on; parameters, data, enable.
        XCTAssertEqual(Array(fake.commandOpcodes.dropFirst(before)),
                       [0x2005, 0x200C, 0x2005, 0x200C, 0x2006, 0x2008, 0x200A])
        let first = try legacyRandomAddress(fake.written[before + 2])
        XCTAssertEqual(Array(fake.written[before + 3]), [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00], "the scan is on again")

        // From then on the scan is paused at once, without asking first.
        await fake.wait("rotation armed") { _ in timer.waiting == 1 }
        let stepStart = fake.written.count
        timer.fire()
        await fake.wait("second frame") { $0.written.count == stepStart + 6 }
        XCTAssertEqual(Array(fake.commandOpcodes.dropFirst(stepStart)), [0x200A, 0x200C, 0x2005, 0x200C, 0x2008, 0x200A])
        let second = try legacyRandomAddress(fake.written[stepStart + 2])
        XCTAssertNotEqual(first, second)
        XCTAssertEqual(fake.written[stepStart + 4], legacyData([2]))
        XCTAssertTrue(enabled.withLock { $0.scan && $0.advertising }, "scanning and advertising both on after the step")

        // Reports still arrive.
        fake.inject(advertisingEvent([ReportModel(eventType: 0x03, addressType: 0x01, address: [1, 2, 3, 4, 5, 6],
                                                  data: msd(company: 0xFFFF, [7]), rssi: 0xC4)]))
        await fake.wait("report delivered") { _ in !reports.withLock { $0.isEmpty } }
        consumer.cancel()
        await central.shutdown()
    }

    /// The address of an LE Set Random Address, checked to be a non-resolvable private address.
    func legacyRandomAddress(_ packet: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        XCTAssertEqual(Array(packet.prefix(4)), [0x01, 0x05, 0x20, 0x06], "LE Set Random Address", file: file, line: line)
        let address = Array(packet.dropFirst(4))
        XCTAssertEqual(address.count, 6, file: file, line: line)
        XCTAssertEqual(try XCTUnwrap(address.last) & 0xC0, 0, "non-resolvable private", file: file, line: line)
        return address
    }

    func testStaleRotationStepOfAReplacedPayloadSendsNothing() async throws {
        let fake = FakeController()
        let timer = ManualTimer()
        let central = HCICentral(channel: fake, adapter: "hci0", options: .init(clock: RadioClock(timer)))
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[1], [2], [3]]))
        await fake.wait("rotation armed") { _ in timer.waiting == 1 }
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[7], [8]]))
        await fake.wait("new rotation armed, old cancelled") { _ in timer.waiting == 1 && timer.cancelled == 1 }
        timer.fire()
        await fake.wait("next frame of the new payload") { $0.written.contains(self.legacyData([8])) }
        XCTAssertFalse(fake.written.contains(legacyData([2])), "no frame of the replaced payload after its replacement")
        await central.shutdown()
        XCTAssertEqual(Array(fake.commandOpcodes.suffix(1)), [0x200A], "shutdown disables the beacon")
    }

    func testExtendedControllerBroadcastsAnExtendedSetAndScansWithExtendedCommands() async throws {
        let fake = FakeController()
        fake.announceExtendedAdvertising(maximumDataLength: 1650)
        let timer = ManualTimer()
        let central = HCICentral(channel: fake, adapter: "hci0", options: .init(clock: RadioClock(timer)))
        let received = Locked<[AdvertisementReport]>([])
        let consumer = Task { for try await r in central.advertisements(companyID: 0xFFFF) { received.withLock { $0.append(r) } } }
        await fake.wait("extended scan enabled") { $0.commandOpcodes.last == 0x2042 }
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x203A, 0x2041, 0x2042])
        XCTAssertEqual(fake.written[6], [0x01, 0x41, 0x20, 0x08, 0x00, 0x00, 0x01, 0x00, 0xA0, 0x00, 0xA0, 0x00],
                       "passive, 1M, 100 ms window = interval")
        XCTAssertEqual(fake.written[7], [0x01, 0x42, 0x20, 0x06, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00])
        let caps = try await central.broadcastCapabilities()
        XCTAssertEqual(caps, BroadcastCapabilities(maxFrameLength: 225, extended: true, frameSlack: .milliseconds(10)),
                       "what one extended report carries")
        XCTAssertEqual(central.advertisingMode, .extended(maximumDataLength: 251))

        let big = (0..<225).map { UInt8(truncatingIfNeeded: $0) }
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [big, [1, 2]], interval: .milliseconds(40)))
        let setup = fake.written(after: 8)
        XCTAssertEqual(setup.count, 4)
        XCTAssertEqual(setup[0], [0x01, 0x36, 0x20, 0x19, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x00, 0x00, 0x07, 0x01,
                                  0x00, 0, 0, 0, 0, 0, 0, 0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00],
                       "own address type random: the set advertises from its own address")
        let firstAddress = try setRandomAddress(setup[1])
        XCTAssertEqual(Array(setup[2...]), [extendedData(big), [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00]])
        XCTAssertEqual(fake.written[10].count, 4 + 4 + 229)
        await fake.wait("rotation armed") { _ in timer.waiting == 1 }
        let beforeRotation = fake.written.count
        timer.fire()
        await fake.wait("second frame") { $0.written.count == beforeRotation + 4 }
        // Each frame from a new address: disable, address, data, enable (a scanner filtering duplicates
        // by address still reports it).
        let step = fake.written(after: beforeRotation)
        XCTAssertEqual(step[0], [0x01, 0x39, 0x20, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
        let secondAddress = try setRandomAddress(step[1])
        XCTAssertNotEqual(secondAddress, firstAddress)
        XCTAssertEqual(Array(step[2...]), [extendedData([1, 2]), [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00]])
        do {
            try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [big + [0]]))
            XCTFail("a 226-byte frame was accepted")
        } catch TransportError.unsupported {}

        // Ballots still arrive, as extended reports of legacy PDUs (event type bit 4).
        var ballot = ReportModel(eventType: 0x0010, addressType: 1, address: [1, 0, 0, 0, 0, 0xC0],
                                 data: msd(company: 0xFFFF, [0xCB, 0x01]), rssi: UInt8(bitPattern: -60))
        ballot.sid = 0xFF
        fake.inject(advertisingEvent([ballot], extended: true))
        await fake.wait("ballot delivered") { _ in received.withLock { $0.count } == 1 }
        XCTAssertEqual(received.withLock { $0.first?.data }, [0xCB, 0x01])

        try await central.stopBroadcasting()
        XCTAssertEqual(fake.written.last, [0x01, 0x39, 0x20, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
        consumer.cancel()
        await fake.wait("extended scan disabled") { $0.written.last == [0x01, 0x42, 0x20, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00] }
        XCTAssertTrue(Set(fake.commandOpcodes).isDisjoint(with: legacyOpcodes),
                      "a controller that got extended commands never gets a legacy one (Vol 4 Part E §3.1.1)")
        await central.shutdown()
    }

    /// The address of an LE Set Advertising Set Random Address for the beacon's set, checked to be a
    /// non-resolvable private address (the two most significant bits 0).
    func setRandomAddress(_ packet: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        XCTAssertEqual(Array(packet.prefix(5)), [0x01, 0x35, 0x20, 0x07, 0x00], "LE Set Advertising Set Random Address, set 0",
                       file: file, line: line)
        let address = Array(packet.dropFirst(5))
        XCTAssertEqual(address.count, 6, file: file, line: line)
        XCTAssertEqual(try XCTUnwrap(address.last) & 0xC0, 0, "non-resolvable private", file: file, line: line)
        return address
    }

    /// btvirt of BlueZ 5.66 announces LE Extended Advertising but answers LE Read Maximum Advertising
    /// Data Length with Unknown HCI Command. Linux goes by the feature bit; so does the backend, with
    /// legacy PDUs of 31 octets through the set, each frame from its own address.
    func testAControllerThatRefusesTheLengthReadGetsAnExtendedSetOfLegacyPDUs() async throws {
        let fake = FakeController()
        fake.announceExtendedAdvertising()
        fake.state.withLock { $0.statusFor = { op, _ in op == 0x203A ? 0x01 : 0 } }   // Unknown HCI Command
        let central = HCICentral(channel: fake, adapter: "hci0")
        let caps = try await central.broadcastCapabilities()
        XCTAssertEqual(caps, .legacy.withFrameTime(slack: .milliseconds(10)), "27-byte frames")
        XCTAssertEqual(central.advertisingMode, .extended(maximumDataLength: 31))
        let before = fake.written.count
        try await central.broadcast(BroadcastPayload(companyID: 0xFFFF, frames: [[1]]))
        let setup = fake.written(after: before)
        XCTAssertEqual(setup.map { UInt16($0[1]) | UInt16($0[2]) << 8 }, [0x2036, 0x2035, 0x2037, 0x2039])
        XCTAssertEqual(Array(setup[0][5...6]), [0x10, 0x00], "Advertising_Event_Properties: legacy, non-connectable")
        XCTAssertEqual(setup[0][14], 0x01, "own address random")
        _ = try setRandomAddress(setup[1])
        XCTAssertTrue(Set(fake.commandOpcodes).isDisjoint(with: legacyOpcodes))
        await central.shutdown()
    }

    // MARK: Voter

    let publicAddress = HCIPeripheral.Options(address: .controllerPublic)

    func testListenerScansPassivelyAtTheDutyCycleAndYieldsOnlyItsCompany() async throws {
        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: publicAddress)
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
        let received = Locked<[AdvertisementReport]>([])
        let fast = Task { for try await r in peripheral.listen(companyID: 0xFFFF, dutyCycle: .fast) { received.withLock { $0.append(r) } } }
        await fake.wait("scan enabled") { $0.commandOpcodes.last == 0x200C }
        XCTAssertEqual(Array(fake.written.suffix(2)), [
            [0x01, 0x0B, 0x20, 0x07, 0x00, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00],   // passive, 60 ms interval, 30 ms window
            [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00],
        ])
        XCTAssertFalse(fake.written.contains([0x01, 0x0A, 0x20, 0x01, 0x00]), "advertising was never disabled to listen")

        let beacon = ReportModel(eventType: 0x03, addressType: 0, address: [6, 5, 4, 3, 2, 1],
                                 data: [0x05, 0xFF, 0xFF, 0xFF, 0xCB, 0x2B], rssi: UInt8(bitPattern: -50))
        var other = beacon
        other.data = [0x05, 0xFF, 0x4C, 0x00, 0xCB, 0x2B]
        fake.inject(advertisingEvent([other, beacon]))
        await fake.wait("the beacon") { _ in received.withLock { $0.count } == 1 }
        XCTAssertEqual(received.withLock { $0.map(\.data) }, [[0xCB, 0x2B]])
        XCTAssertEqual(peripheral.statistics().reportsIgnored, 1)

        // A second stream asking for another duty cycle: the receiver follows the last request.
        let slow = Task { for try await _ in peripheral.listen(companyID: 0xFFFF, dutyCycle: .slow) {} }
        await fake.wait("slow scan") { f in
            f.written.last == [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00] && f.written.filter { $0.starts(with: [0x01, 0x0B, 0x20]) }.count == 2
        }
        XCTAssertEqual(Array(fake.written.suffix(3)), [
            [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00],
            [0x01, 0x0B, 0x20, 0x07, 0x00, 0x00, 0x08, 0x12, 0x00, 0x00, 0x00],   // 1.28 s / 11.25 ms
            [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00],
        ])
        fast.cancel()
        await fake.wait("first stream gone") { _ in peripheral.listenerCount == 1 }
        XCTAssertEqual(fake.written.last, [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00], "the other stream still listens")
        slow.cancel()
        await fake.wait("scan disabled") { $0.written.last == [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00] }
        XCTAssertNotNil(peripheral.advertisingAddress)
        await peripheral.shutdown()
        XCTAssertEqual(fake.written.last, [0x01, 0x0A, 0x20, 0x01, 0x00], "shutdown stops the ballot; the scan was already off")
    }

    func testListenerClampsTheDutyCycleAndSaysSo() async throws {
        let (tooShort, shortNote) = HCIPeripheral.scanParameters(
            for: ScanDutyCycle(window: .milliseconds(1), interval: .milliseconds(1)), ownAddressType: .randomAddress)
        XCTAssertEqual(tooShort, ScanParameters(interval: 0x0004, window: 0x0004, ownAddressType: .randomAddress))
        XCTAssertTrue(shortNote?.contains("set to 0.0025 seconds every 0.0025 seconds") ?? false, shortNote ?? "no note")
        let (tooLong, longNote) = HCIPeripheral.scanParameters(
            for: ScanDutyCycle(window: .seconds(20), interval: .seconds(30)), ownAddressType: .publicAddress)
        XCTAssertEqual(tooLong.interval, 0x4000)
        XCTAssertEqual(tooLong.window, 0x4000)
        XCTAssertNotNil(longNote)
        let (exact, none) = HCIPeripheral.scanParameters(for: .fast, ownAddressType: .publicAddress)
        XCTAssertEqual(exact, ScanParameters(interval: 0x60, window: 0x30))
        XCTAssertNil(none)

        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: publicAddress)
        let seen = Locked<[RadioStatus]>([])
        let statuses = Task { for await s in peripheral.status() { seen.withLock { $0.append(s) } } }
        let listening = Task { for try await _ in peripheral.listen(companyID: 0xFFFF,
                                                                    dutyCycle: ScanDutyCycle(window: .milliseconds(1), interval: .milliseconds(2))) {} }
        await fake.wait("scan enabled") { $0.commandOpcodes.last == 0x200C }
        XCTAssertEqual(fake.written[fake.written.count - 2], [0x01, 0x0B, 0x20, 0x07, 0x00, 0x04, 0x00, 0x04, 0x00, 0x00, 0x00])
        await fake.wait("status note") { _ in seen.withLock { $0.contains { $0.lastError?.contains("set to") ?? false } } }
        listening.cancel()
        statuses.cancel()
        await peripheral.shutdown()
    }

    func testExtendedVoterAdvertisesTheBallotAsALegacyPDUAndJoinsABeaconInPieces() async throws {
        let fake = FakeController()
        fake.announceExtendedAdvertising(maximumDataLength: 251)
        let random = try XCTUnwrap(DeviceAddress("C0:11:22:33:44:55"))
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: .init(address: .random(random)))
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1, 2, 3], connectable: false))
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x203A, 0x2005, 0x2036, 0x2035, 0x2037, 0x2039])
        XCTAssertEqual(fake.written[7], [0x01, 0x36, 0x20, 0x19, 0x00, 0x10, 0x00, 0xA0, 0x00, 0x00, 0xA0, 0x00, 0x00, 0x07, 0x01,
                                         0x00, 0, 0, 0, 0, 0, 0, 0x00, 0x7F, 0x01, 0x00, 0x01, 0x00, 0x00],
                       "legacy ADV_NONCONN_IND through the extended command, own address random")
        XCTAssertEqual(fake.written[8], [0x01, 0x35, 0x20, 0x07, 0x00, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0])
        XCTAssertEqual(fake.written[9], [0x01, 0x37, 0x20, 14, 0x00, 0x03, 0x01, 10, 0x02, 0x01, 0x06, 0x06, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        XCTAssertEqual(fake.written[10], [0x01, 0x39, 0x20, 0x06, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00])

        let received = Locked<[AdvertisementReport]>([])
        let listening = Task { for try await r in peripheral.listen(companyID: 0xFFFF, dutyCycle: .fast) { received.withLock { $0.append(r) } } }
        await fake.wait("extended scan") { $0.commandOpcodes.last == 0x2042 }
        XCTAssertEqual(fake.written[11], [0x01, 0x41, 0x20, 0x08, 0x01, 0x00, 0x01, 0x00, 0x60, 0x00, 0x30, 0x00])

        // A 247-byte beacon frame: 251 octets of AD, reported as 229 + 22.
        let frame = (0..<247).map { UInt8(truncatingIfNeeded: 0xCB &+ $0) }
        let ad: [UInt8] = [250, 0xFF, 0xFF, 0xFF] + frame
        var head = ReportModel(eventType: 0x0020, addressType: 0, address: [6, 5, 4, 3, 2, 1], data: Array(ad[..<229]), rssi: 0xC4)
        head.sid = 0
        var tail = head
        tail.eventType = 0x0000
        tail.data = Array(ad[229...])
        fake.inject(advertisingEvent([head], extended: true))
        fake.inject(advertisingEvent([tail], extended: true))
        await fake.wait("joined beacon") { _ in received.withLock { $0.count } == 1 }
        XCTAssertEqual(received.withLock { $0.first?.data }, frame)

        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [4], connectable: false))
        XCTAssertEqual(fake.commandOpcodes.last, 0x2037, "the ballot changes in place")
        listening.cancel()
        await fake.wait("extended scan disabled") { $0.written.last == [0x01, 0x42, 0x20, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00] }
        await peripheral.shutdown()
        XCTAssertEqual(fake.written.last, [0x01, 0x39, 0x20, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00])
        XCTAssertTrue(Set(fake.commandOpcodes).isDisjoint(with: legacyOpcodes))
    }
}
