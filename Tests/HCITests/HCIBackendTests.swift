import ClickerTestSupport
import ClickerTransport
@testable import HCI
import Synchronization
import XCTest

/// The central and peripheral adapters driven against a scripted controller: which commands
/// they send, in which order, with which bytes, and how they treat events.
final class HCIBackendTests: XCTestCase {
    let initSequence: [UInt16] = [0x0C03, 0x0C01, 0x2001, 0x1009, 0x2003]
    let report = ReportModel(eventType: 0x03, addressType: 0x01, address: [0x01, 0x00, 0x00, 0x01, 0xAA, 0xC0],
                             data: msd(company: 0xFFFF, [0x01, 0x02, 0x03]), rssi: UInt8(bitPattern: -55))

    // MARK: Central

    func testCentralScansDeliversAndStopsOnCancellation() async throws {
        let fake = FakeController()
        let central = HCICentral(channel: fake, adapter: "hci0")
        let received = Locked<[AdvertisementReport]>([])
        let consumer = Task {
            for try await r in central.advertisements(companyID: 0xFFFF) { received.withLock { $0.append(r) } }
        }
        await fake.wait("scan enable") { $0.commandOpcodes.count == 7 }
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x200B, 0x200C])
        XCTAssertEqual(fake.written[5], [0x01, 0x0B, 0x20, 0x07, 0x00, 0xA0, 0x00, 0xA0, 0x00, 0x00, 0x00],
                       "passive, 100 ms interval = window (100 % duty)")
        XCTAssertEqual(fake.written[6], [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00], "duplicate filtering off")

        var other = report
        other.data = msd(company: 0x004C, [9])
        var second = report
        second.address = [6, 5, 4, 3, 2, 1]
        second.rssi = 127
        fake.inject(advertisingEvent([report, other, second]))
        fake.inject([0x04, 0x3E, 0x02, 0x02, 0x00])        // malformed: zero reports
        fake.inject(advertisingEvent([report], extended: true))
        await fake.wait("three reports") { _ in received.withLock { $0.count } >= 3 }
        let got = received.withLock { $0 }
        XCTAssertEqual(got.map(\.address.description), ["C0:AA:01:00:00:01", "01:02:03:04:05:06", "C0:AA:01:00:00:01"])
        XCTAssertEqual(got.map(\.rssi), [-55, nil, -55])
        XCTAssertEqual(got.map(\.data), [[1, 2, 3], [1, 2, 3], [1, 2, 3]])
        XCTAssertTrue(got.allSatisfy { $0.companyID == 0xFFFF })
        let stats = central.statistics()
        XCTAssertEqual(stats.reportsDelivered, 3)
        XCTAssertEqual(stats.reportsIgnored, 1)
        XCTAssertEqual(stats.malformed, 1)

        consumer.cancel()
        await fake.wait("scan disable") { $0.written.last == [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00] }
        XCTAssertEqual(fake.commandOpcodes.count, 8)
        await central.shutdown()
        await fake.wait("channel closed") { $0.isClosed }
    }

    func testReadsRunOnADedicatedThreadAndStopAtShutdown() async throws {
        let fake = FakeController()
        let central = HCICentral(channel: fake, adapter: "hci3")
        await fake.wait("several reads") { $0.state.withLock { $0.reads } >= 3 }
        XCTAssertFalse(fake.state.withLock { $0.readInsideTask },
                       "the blocking read loop must run on its own thread, not in a task on the cooperative pool")
        await central.shutdown()
        await fake.wait("channel closed by the reader") { $0.isClosed }
    }

    func testReportClockIsMonotonic() {
        var last = RadioInstant.now()
        for _ in 0..<1000 {
            let t = RadioInstant.now()
            XCTAssertGreaterThanOrEqual(t, last)
            last = t
        }
    }

    func testCentralScanOptionsReachTheController() async throws {
        let fake = FakeController()
        let central = HCICentral(channel: fake, adapter: "hci0", options: .init(
            scanInterval: .milliseconds(60), scanWindow: .milliseconds(30), activeScanning: true,
            filterDuplicates: true, resetController: false))
        let consumer = Task { for try await _ in central.advertisements(companyID: 0xFFFF) {} }
        await fake.wait("scan enable") { $0.commandOpcodes.last == 0x200C }
        XCTAssertEqual(fake.commandOpcodes, [0x0C01, 0x2001, 0x1009, 0x2003, 0x200B, 0x200C], "no Reset when disabled")
        XCTAssertEqual(fake.written[4], [0x01, 0x0B, 0x20, 0x07, 0x01, 0x60, 0x00, 0x30, 0x00, 0x00, 0x00])
        XCTAssertEqual(fake.written[5], [0x01, 0x0C, 0x20, 0x02, 0x01, 0x01])
        consumer.cancel()
        await central.shutdown()
    }

    func testCentralPeriodicScanRestart() async throws {
        let fake = FakeController()
        let timer = ManualTimer()
        let central = HCICentral(channel: fake, adapter: "hci0",
                                 options: .init(scanRestartInterval: .milliseconds(20), clock: RadioClock(timer)))
        let consumer = Task { for try await _ in central.advertisements(companyID: 0xFFFF) {} }
        let off: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00]
        let on: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]
        func count(_ w: [UInt8]) -> Int { fake.written.filter { $0 == w }.count }
        await fake.wait("scan enabled, restart timer armed") { _ in count(on) == 1 && timer.waiting == 1 }
        for n in 1...2 {
            timer.fire()
            await fake.wait("restart \(n) done, timer armed again") { _ in count(off) == n && count(on) == n + 1 && timer.waiting == 1 }
        }
        // Every restart is off then on: the writes after the initial enable alternate.
        let scans = fake.written.filter { $0 == off || $0 == on }
        for (i, w) in scans.enumerated() { XCTAssertEqual(w, i % 2 == 0 ? on : off, "write \(i)") }
        consumer.cancel()
        await fake.wait("scan disabled") { _ in count(off) == 3 }
        // The stop cancels the timer: its wait ends in cancellation (acknowledged by the timer), after
        // which the restart loop has returned and nothing can restart scanning.
        await fake.wait("restart timer cancelled") { _ in timer.cancelled == 1 && timer.waiting == 0 }
        let settled = fake.written.count
        timer.fire()
        await central.shutdown()   // one operation at a time: a restart under way would finish first
        XCTAssertEqual(fake.written.count, settled, "no restarts after the last stream ended")
        XCTAssertEqual(fake.written.last, off, "scanning left disabled")
        XCTAssertEqual(timer.waiting, 0, "the restart loop ended")
    }

    /// One clock for the HCI central (`HCICentral.Options.clock`): the report stamps and the restart
    /// times it shows are read from the clock the scan restart waits on, so a test that moves it moves
    /// both together.
    func testCentralStampsReportsAndRestartsOnItsOneClock() async throws {
        let fake = FakeController()
        let timer = ManualTimer()
        let clock = RadioClock(timer)
        let central = HCICentral(channel: fake, adapter: "hci0",
                                 options: .init(scanRestartInterval: .milliseconds(20), clock: clock))
        let received = Locked<[AdvertisementReport]>([])
        let consumer = Task {
            for try await r in central.advertisements(companyID: 0xFFFF) { received.withLock { $0.append(r) } }
        }
        let on: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]
        await fake.wait("scan enabled, restart timer armed") { _ in timer.waiting == 1 && fake.written.contains(on) }
        let start = clock.now
        fake.inject(advertisingEvent([report]))
        await fake.wait("the first report") { _ in received.withLock { $0.count } == 1 }
        timer.fire()
        await fake.wait("restarted, timer armed again") { _ in fake.written.filter { $0 == on }.count == 2 && timer.waiting == 1 }
        fake.inject(advertisingEvent([report]))
        await fake.wait("the second report") { _ in received.withLock { $0.count } == 2 }
        XCTAssertEqual(received.withLock { $0.map(\.timestamp) }, [start, start + .milliseconds(20)])
        var statuses = central.status().makeAsyncIterator()
        let status = await statuses.next()
        XCTAssertEqual(status?.lastDiscoveryRestart, start + .milliseconds(20))
        consumer.cancel()
        await central.shutdown()
    }

    func testCentralTwoStreamsShareOneScan() async throws {
        let fake = FakeController()
        let central = HCICentral(channel: fake, adapter: "hci0")
        let counts = Locked<[Int]>([0, 0])
        let a = Task { for try await _ in central.advertisements(companyID: 0xFFFF) { counts.withLock { $0[0] += 1 } } }
        let b = Task { for try await _ in central.advertisements(companyID: 0xFFFF) { counts.withLock { $0[1] += 1 } } }
        await fake.wait("both subscribed") { _ in central.subscriberCount == 2 }
        // Starts and stops run one at a time, so once a marker stream is registered, whatever the
        // second stream's start wrote is written.
        let marker1 = Task { for try await _ in central.advertisements(companyID: 0x0001) {} }
        await fake.wait("marker registered") { _ in central.subscriberCount == 3 }
        XCTAssertEqual(fakeEnabledScans(fake), 1, "one Scan Enable for two streams")
        fake.inject(advertisingEvent([report]))
        await fake.wait("both streams got the report") { _ in counts.withLock { $0 } == [1, 1] }
        a.cancel()
        await fake.wait("first stream unregistered") { _ in central.subscriberCount == 2 }
        let marker2 = Task { for try await _ in central.advertisements(companyID: 0x0002) {} }
        await fake.wait("second marker registered") { _ in central.subscriberCount == 3 }
        XCTAssertFalse(fake.written.contains([0x01, 0x0C, 0x20, 0x02, 0x00, 0x00]), "streams left: keep scanning")
        for t in [b, marker1, marker2] { t.cancel() }
        await fake.wait("scan disable") { $0.written.last == [0x01, 0x0C, 0x20, 0x02, 0x00, 0x00] }
        XCTAssertEqual(counts.withLock { $0 }, [1, 1])
        await central.shutdown()
    }

    func testCentralRejectedCommandFailsTheStream() async {
        let fake = FakeController()
        fake.state.withLock { $0.statusFor = { op, _ in op == 0x200B ? 0x12 : 0 } }
        let central = HCICentral(channel: fake, adapter: "hci0")
        do {
            for try await _ in central.advertisements(companyID: 0xFFFF) {}
            XCTFail("stream ended without error")
        } catch {
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .leSetScanParameters, status: 0x12))
        }
        await central.shutdown()
    }

    /// A command times out on the central's clock, not in real time: a reply read before
    /// `commandTimeout` has passed on it is taken; a command still unanswered once it has passed fails
    /// the stream at once (long before it would pass in real time), and nothing more is sent.
    func testCentralCommandTimeout() async {
        let fake = FakeController()
        fake.state.withLock { $0.silent = [0x200B, 0x200C] }
        let clock = TestClock()
        let timeout = Duration.seconds(30)
        let central = HCICentral(channel: fake, adapter: "hci0", options: .init(commandTimeout: timeout, clock: RadioClock(clock)))
        let started = ContinuousClock.now
        let outcome = Task { () -> (any Error)? in
            do {
                for try await _ in central.advertisements(companyID: 0xFFFF) {}
                return nil
            } catch {
                return error
            }
        }
        await fake.wait("Set Scan Parameters, unanswered") { $0.commandOpcodes.last == 0x200B }
        clock.advance(by: timeout - .milliseconds(1))
        fake.inject(commandComplete(0x200B, [0]))
        await fake.wait("Set Scan Enable after the late reply") { $0.commandOpcodes.last == 0x200C }
        clock.advance(by: timeout)
        let error = await outcome.value
        XCTAssertEqual(error as? HCIError, .commandTimeout(.leSetScanEnable))
        XCTAssertLessThan(ContinuousClock.now - started, timeout, "timed out on the clock, not in real time")
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x200B, 0x200C], "nothing sent after the unanswered command")
        await central.shutdown()
    }

    func testCentralHardwareErrorEndsTheStreamWithAReason() async throws {
        let fake = FakeController()
        let central = HCICentral(channel: fake, adapter: "hci0")
        let seenSoFar = Mutex<[RadioStatus]>([])
        let statuses = Task { () -> [RadioStatus] in
            for await s in central.status() {
                seenSoFar.withLock { $0.append(s) }
                if s.lastError != nil && s.state == .stopped { break }
            }
            return seenSoFar.withLock { $0 }
        }
        let consumer = Task { () -> (any Error)? in
            do { for try await _ in central.advertisements(companyID: 0xFFFF) {} } catch { return error }
            return nil
        }
        // The central reports "scanning" once Scan Enable completes, a moment after the command is
        // written: fail the controller only once it has, or a loaded machine skips that state.
        await fake.wait("scanning") { _ in seenSoFar.withLock { $0.contains { $0.state == .scanning } } }
        fake.inject([0x04, 0x10, 0x01, 0x42])
        let error = await consumer.value
        XCTAssertEqual(error as? HCIError, .hardwareError(code: 0x42))
        let seen = await statuses.value
        XCTAssertEqual(seen.first?.state, .starting)
        XCTAssertTrue(seen.contains { $0.state == .scanning && $0.adapter == "hci0 (01:02:03:04:05:06)" })
        XCTAssertEqual(seen.last?.lastError, HCIError.hardwareError(code: 0x42).description)
        await central.shutdown()
    }

    func testCentralReadCharacteristicIsUnsupported() async {
        let central = HCICentral(channel: FakeController(), adapter: "hci0")
        do {
            _ = try await central.readCharacteristic(device: DeviceAddress(rawValue: 1), service: UUID128(high: 1, low: 2),
                                                     characteristic: UUID128(high: 3, low: 4), timeout: .seconds(1))
            XCTFail("read succeeded")
        } catch let TransportError.unsupported(why) {
            XCTAssertTrue(why.contains("advertisements"), why)
        } catch {
            XCTFail("\(error)")
        }
        await central.shutdown()
    }

    // MARK: Peripheral

    /// The controller's public address, so that command indexes stay those of the sequence without
    /// LE Set Random Address (the default address is covered by the NRPA tests below).
    let publicAddress = HCIPeripheral.Options(address: .controllerPublic)

    func testPeripheralAdvertisesUpdatesInPlaceAndStops() async throws {
        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: publicAddress)
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1, 2, 3], connectable: false))
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x2006, 0x2008, 0x200A])
        XCTAssertEqual(fake.written[5], [0x01, 0x06, 0x20, 0x0F, 0xA0, 0x00, 0xA0, 0x00, 0x03, 0x00, 0x00,
                                         0, 0, 0, 0, 0, 0, 0x07, 0x00])
        XCTAssertEqual(fake.written[6], [0x01, 0x08, 0x20, 0x20, 10, 0x02, 0x01, 0x06, 0x06, 0xFF, 0xFF, 0xFF, 1, 2, 3]
                       + [UInt8](repeating: 0, count: 21))
        XCTAssertEqual(fake.written[7], [0x01, 0x0A, 0x20, 0x01, 0x01])
        XCTAssertEqual(peripheral.advertisingAddress?.description, "01:02:03:04:05:06")

        // Changed vote, same interval: only the data changes, advertising continues.
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [4, 5], connectable: false))
        XCTAssertEqual(fake.commandOpcodes.count, 9)
        XCTAssertEqual(fake.written[8], [0x01, 0x08, 0x20, 0x20, 9, 0x02, 0x01, 0x06, 0x05, 0xFF, 0xFF, 0xFF, 4, 5]
                       + [UInt8](repeating: 0, count: 22))
        // Same payload again: nothing to send.
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [4, 5], connectable: false))
        XCTAssertEqual(fake.commandOpcodes.count, 9)
        // New interval: disable, parameters, data, enable.
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [4, 5], interval: .milliseconds(250),
                                                          connectable: false))
        XCTAssertEqual(Array(fake.commandOpcodes[9...]), [0x200A, 0x2006, 0x2008, 0x200A])
        XCTAssertEqual(fake.written[9], [0x01, 0x0A, 0x20, 0x01, 0x00])
        XCTAssertEqual(Array(fake.written[10][4..<8]), [0x90, 0x01, 0x90, 0x01])   // 400 slots = 250 ms
        XCTAssertEqual(fake.written[12], [0x01, 0x0A, 0x20, 0x01, 0x01])

        try await peripheral.stopAdvertising()
        XCTAssertEqual(fake.written.last, [0x01, 0x0A, 0x20, 0x01, 0x00])
        let count = fake.written.count
        try await peripheral.stopAdvertising()
        XCTAssertEqual(fake.written.count, count, "stopAdvertising is idempotent")
        await peripheral.shutdown()
        XCTAssertEqual(fake.written.count, count, "nothing to disable at shutdown")
        await fake.wait("channel closed") { $0.isClosed }
        await peripheral.shutdown()
    }

    func testPeripheralReenableOnUpdate() async throws {
        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: .init(reenableOnUpdate: true))
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
        let before = fake.written.count
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [2], connectable: false))
        XCTAssertEqual(Array(fake.written[before...]), [
            [0x01, 0x0A, 0x20, 0x01, 0x00],
            try HCICommand.leSetAdvertisingData(msd(company: 0xFFFF, [2])).packet,
            [0x01, 0x0A, 0x20, 0x01, 0x01],
        ])
        await peripheral.shutdown()
        XCTAssertEqual(fake.written.last, [0x01, 0x0A, 0x20, 0x01, 0x00])
    }

    func testPeripheralShutdownDisablesAdvertising() async throws {
        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1")
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
        await peripheral.shutdown()
        XCTAssertEqual(fake.written.last, [0x01, 0x0A, 0x20, 0x01, 0x00])
        await fake.wait("channel closed") { $0.isClosed }
        do {
            try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
            XCTFail("advertised after shutdown")
        } catch {
            guard case HCIError.closed = error else { return XCTFail("\(error)") }
        }
    }

    func testPeripheralConnectableRequestAdvertisesNonConnectableAndSaysSo() async throws {
        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: publicAddress)
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: true))
        XCTAssertEqual(fake.written[5][8], 0x03, "ADV_NONCONN_IND")
        var statuses = peripheral.status().makeAsyncIterator()
        let status = await statuses.next()
        XCTAssertEqual(status?.state, .advertising)
        XCTAssertTrue(status?.lastError?.contains("non-connectable") ?? false, "\(String(describing: status))")
        await peripheral.shutdown()
    }

    func testPeripheralPublishIsUnsupported() async {
        let peripheral = HCIPeripheral(channel: FakeController(), adapter: "hci1")
        do {
            try await peripheral.publish(service: UUID128(high: 1, low: 2), characteristic: UUID128(high: 3, low: 4), value: [1])
            XCTFail("publish succeeded")
        } catch let TransportError.unsupported(why) {
            XCTAssertTrue(why.contains("non-connectable"), why)
        } catch {
            XCTFail("\(error)")
        }
        await peripheral.shutdown()
    }

    func testPeripheralUsesRandomStaticAddressWhenControllerHasNone() async throws {
        let fake = FakeController()
        fake.state.withLock { $0.bdaddr = [0, 0, 0, 0, 0, 0] }
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: publicAddress)
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x2005, 0x2006, 0x2008, 0x200A])
        let set = fake.written[5]
        XCTAssertEqual(set.count, 10)
        XCTAssertEqual(set[9] & 0xC0, 0xC0, "random static: two top bits set")
        let address = try XCTUnwrap(peripheral.advertisingAddress)
        XCTAssertEqual(Array(set[4...]), [address.bytes.5, address.bytes.4, address.bytes.3,
                                          address.bytes.2, address.bytes.1, address.bytes.0])
        XCTAssertEqual(fake.written[6][9], 0x01, "Own_Address_Type random")
        await peripheral.shutdown()
    }

    /// By default each peripheral (one per poll in `clicker-vote`) advertises from a fresh
    /// non-resolvable private address: LE Set Random Address first, then parameters with
    /// own-address-type random (0x01), never the public address.
    func testPeripheralAdvertisesFromAFreshNonResolvablePrivateAddressByDefault() async throws {
        var seen: Set<DeviceAddress> = []
        for _ in 0..<2 {
            let fake = FakeController()
            let peripheral = HCIPeripheral(channel: fake, adapter: "hci1")
            try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1, 2, 3], connectable: false))
            XCTAssertEqual(fake.commandOpcodes, initSequence + [0x2005, 0x2006, 0x2008, 0x200A])
            let address = try XCTUnwrap(peripheral.advertisingAddress)
            let b = address.bytes
            XCTAssertEqual(fake.written[5], [0x01, 0x05, 0x20, 0x06, b.5, b.4, b.3, b.2, b.1, b.0], "LE Set Random Address, LSB first")
            XCTAssertEqual(b.0 & 0xC0, 0x00, "NRPA: two most significant bits 00")
            XCTAssertNotEqual(address.rawValue, 0)
            XCTAssertNotEqual(address.rawValue, 0x3FFF_FFFF_FFFF)
            XCTAssertNotEqual(address.description, "01:02:03:04:05:06", "not the public address")
            XCTAssertEqual(fake.written[6], [0x01, 0x06, 0x20, 0x0F, 0xA0, 0x00, 0xA0, 0x00, 0x03, 0x01, 0x00,
                                             0, 0, 0, 0, 0, 0, 0x07, 0x00], "Own_Address_Type = random")
            seen.insert(address)
            await peripheral.shutdown()
        }
        XCTAssertEqual(seen.count, 2, "a fresh address per peripheral (per poll)")
    }

    /// The generator's draws are masked to 46 bits; all-zero, all-one and public-address draws are redrawn.
    func testNonResolvablePrivateAddressRules() {
        struct Scripted: RandomNumberGenerator {
            var values: [UInt64]
            mutating func next() -> UInt64 { values.removeFirst() }
        }
        let publicAddress = DeviceAddress(rawValue: 0x0102_0304_0506)
        var g = Scripted(values: [0, 0xFFFF_FFFF_FFFF_FFFF, 0xC000_0000_0000 | 0x0102_0304_0506, 0x1234_5678_9ABC_DEF0])
        let a = DeviceAddress.nonResolvablePrivate(avoiding: publicAddress, using: &g)
        XCTAssertEqual(a.description, "16:78:9A:BC:DE:F0")
        XCTAssertTrue(g.values.isEmpty, "three draws refused, the fourth taken")
    }

    func testPeripheralConfiguredRandomAddress() async throws {
        let fake = FakeController()
        let random = try XCTUnwrap(DeviceAddress("C0:11:22:33:44:55"))
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: .init(address: .random(random)))
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
        XCTAssertEqual(fake.written[5], [0x01, 0x05, 0x20, 0x06, 0x55, 0x44, 0x33, 0x22, 0x11, 0xC0])
        XCTAssertEqual(peripheral.advertisingAddress, random)
        await peripheral.shutdown()
    }

    func testPeripheralFallsBackTo100msOnOldControllers() async throws {
        let fake = FakeController()
        // A Bluetooth 4.x controller: non-connectable advertising below 100 ms is invalid.
        fake.state.withLock { $0.statusFor = { op, p in op == 0x2006 && (UInt16(p[0]) | UInt16(p[1]) << 8) < 0xA0 ? 0x12 : 0 } }
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1", options: publicAddress)
        try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], interval: .milliseconds(50),
                                                          connectable: false))
        XCTAssertEqual(fake.commandOpcodes, initSequence + [0x2006, 0x2006, 0x2008, 0x200A])
        XCTAssertEqual(Array(fake.written[5][4..<8]), [0x50, 0x00, 0x50, 0x00])
        XCTAssertEqual(Array(fake.written[6][4..<8]), [0xA0, 0x00, 0xA0, 0x00])
        var statuses = peripheral.status().makeAsyncIterator()
        let status = await statuses.next()
        XCTAssertTrue(status?.lastError?.contains("100 ms") ?? false)
        await peripheral.shutdown()
    }

    func testPeripheralRejectsOversizedPayloadWithoutTouchingTheController() async {
        let fake = FakeController()
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1")
        do {
            try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [UInt8](repeating: 0, count: 25),
                                                              connectable: false))
            XCTFail("advertised 25 payload bytes")
        } catch {
            XCTAssertEqual(error as? HCIError, .advertisingDataTooLong(bytes: 32, maximum: 31))
        }
        XCTAssertEqual(fake.written, [])
        await peripheral.shutdown()
    }

    func testPeripheralRejectedEnableSurfaces() async {
        let fake = FakeController()
        fake.state.withLock { $0.statusFor = { op, _ in op == 0x200A ? 0x0C : 0 } }
        let peripheral = HCIPeripheral(channel: fake, adapter: "hci1")
        do {
            try await peripheral.advertise(AdvertisingPayload(companyID: 0xFFFF, data: [1], connectable: false))
            XCTFail("advertise succeeded")
        } catch {
            XCTAssertEqual(error as? HCIError, .commandFailed(opcode: .leSetAdvertisingEnable, status: 0x0C))
        }
        await peripheral.shutdown()
    }
}

private func fakeEnabledScans(_ fake: FakeController) -> Int {
    fake.written.filter { $0 == [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00] }.count
}
