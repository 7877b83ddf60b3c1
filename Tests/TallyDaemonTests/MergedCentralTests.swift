import ClickerTally
import ClickerTransport
import ClickerWire
import Synchronization
@testable import TallyDaemon
import XCTest

/// One radio of several, for ``MergedCentral``: its reports come from the test (a ``ReportQueue``), its
/// GATT reads answer what the test set per device (a value, or an error), its status is the test's,
/// and, when `broadcast` is given, it broadcasts: it records every payload, or refuses with `refusal`.
final class FakeRadio: CentralTransport, Sendable {
    let name: String
    let queue = ReportQueue(limit: 1 << 16)
    let statuses: RadioStatusBroadcaster
    private let values = Mutex<[DeviceAddress: Result<[UInt8], TransportError>]>([:])
    /// The devices read, in order.
    let reads = Mutex<[DeviceAddress]>([])

    init(_ name: String) {
        self.name = name
        statuses = RadioStatusBroadcaster(RadioStatus(adapter: name, state: .scanning))
    }

    func serve(_ value: Result<[UInt8], TransportError>, for device: DeviceAddress) {
        values.withLock { $0[device] = value }
    }

    func hear(_ reports: [AdvertisementReport]) { queue.append(contentsOf: reports) }

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        AsyncThrowingStream { $0.finish(throwing: TransportError.unsupported("batches only")) }
    }

    func advertisementBatches(companyID: UInt16) -> AdvertisementBatches { queue.batches }

    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        reads.withLock { $0.append(device) }
        guard let v = values.withLock({ $0[device] }) else { throw TransportError.notConnected(device) }
        return try v.get()
    }

    func status() -> AsyncStream<RadioStatus> { statuses.stream() }
}

/// A ``FakeRadio`` that broadcasts.
final class FakeBroadcastingRadio: CentralTransport, BroadcasterTransport, Sendable {
    let radio: FakeRadio
    let capabilities: BroadcastCapabilities
    let refusal = Mutex<TransportError?>(nil)
    let payloads = Mutex<[BroadcastPayload]>([])
    let stops = Mutex(0)
    /// Yields after each payload taken.
    let took: AsyncStream<Void>
    private let tookContinuation: AsyncStream<Void>.Continuation

    init(_ name: String, capabilities: BroadcastCapabilities = .extended) {
        radio = FakeRadio(name)
        self.capabilities = capabilities
        (took, tookContinuation) = AsyncStream.makeStream()
    }

    func advertisements(companyID: UInt16) -> AsyncThrowingStream<AdvertisementReport, any Error> {
        radio.advertisements(companyID: companyID)
    }
    func advertisementBatches(companyID: UInt16) -> AdvertisementBatches { radio.advertisementBatches(companyID: companyID) }
    func readCharacteristic(device: DeviceAddress, service: UUID128, characteristic: UUID128,
                            timeout: Duration) async throws -> [UInt8] {
        try await radio.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: timeout)
    }
    func status() -> AsyncStream<RadioStatus> { radio.status() }

    func broadcastCapabilities() async throws -> BroadcastCapabilities { capabilities }
    func broadcast(_ payload: BroadcastPayload) async throws {
        if let e = refusal.withLock({ $0 }) { throw e }
        payloads.withLock { $0.append(payload) }
        tookContinuation.yield()
    }
    func stopBroadcasting() async throws { stops.withLock { $0 += 1 } }
}

final class MergedCentralTests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input
    let service = BallotFormat.serviceUUID, characteristic = BallotFormat.ballotCharacteristicUUID

    func report(_ address: UInt64, rssi: Int8 = -60, at ms: UInt64, data: [UInt8] = [1, 2, 3]) -> AdvertisementReport {
        AdvertisementReport(address: DeviceAddress(rawValue: address), rssi: rssi, companyID: BallotFormat.companyID,
                            data: data, timestamp: RadioInstant(nanoseconds: ms * 1_000_000))
    }

    func ballot(voter: UInt32, sequence: UInt16 = 1, _ answer: Answer, at ms: UInt64, rssi: Int8 = -60) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: sequence, answer: answer)
        return report(0xC000_0000_0000 | UInt64(voter), rssi: rssi, at: ms,
                      data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))))
    }

    /// Takes batches from `iterator` until `count` reports came.
    func take(_ count: Int, from iterator: inout AdvertisementBatches.AsyncIterator) async throws -> [AdvertisementReport] {
        var got: [AdvertisementReport] = []
        while got.count < count, let b = try await iterator.next() { got += b }
        return got
    }

    /// Waits (a hang guard only, no timing) until `condition` holds on the controller.
    func until(_ controller: PollController, _ what: String, _ condition: (PollController) async -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(30)
        while await !condition(controller), ContinuousClock.now < deadline { await Task.yield() }
        let holds = await condition(controller)
        XCTAssertTrue(holds, what)
    }

    // MARK: Reports

    /// Each radio's reports reach the one consumer, each with its own RSSI and timestamp.
    func testTheReportsOfEveryRadioReachTheConsumerWithTheirOwnSignalAndTime() async throws {
        let a = FakeRadio("hci0"), b = FakeRadio("hci1")
        let merged = MergedCentral([.init(name: "hci0", central: a), .init(name: "hci1", central: b)])
        var it = merged.advertisementBatches(companyID: BallotFormat.companyID).makeAsyncIterator()
        a.hear([report(1, rssi: -40, at: 10), report(2, rssi: -41, at: 11)])
        b.hear([report(1, rssi: -80, at: 12), report(3, rssi: -81, at: 13)])
        let got = try await take(4, from: &it)
        XCTAssertEqual(Set(got), Set([report(1, rssi: -40, at: 10), report(2, rssi: -41, at: 11),
                                      report(1, rssi: -80, at: 12), report(3, rssi: -81, at: 13)]))
        // The single-report stream carries the same union.
        let c = FakeRadio("hci2"), d = FakeRadio("hci3")
        let other = MergedCentral([.init(name: "hci2", central: c), .init(name: "hci3", central: d)])
        var single = other.advertisements(companyID: BallotFormat.companyID).makeAsyncIterator()
        c.hear([report(7, at: 1)])
        d.hear([report(8, at: 2)])
        var two: [AdvertisementReport] = []
        while two.count < 2, let r = try await single.next() { two.append(r) }
        XCTAssertEqual(Set(two.map(\.address.rawValue)), [7, 8])
    }

    /// One radio is that radio, unchanged; several are merged, broadcasting when any of them broadcasts.
    func testCombiningOneRadioGivesThatRadio() {
        let a = FakeRadio("hci0")
        XCTAssertTrue(MergedCentral.combining([.init(name: "hci0", central: a)]) as? FakeRadio === a)
        XCTAssertTrue(MergedCentral.combining([.init(name: "hci0", central: a), .init(name: "hci1", central: FakeRadio("hci1"))])
                      is MergedCentral)
        let both = MergedCentral.combining([.init(name: "hci0", central: a), .init(name: "hci1", central: FakeBroadcastingRadio("hci1"))])
        XCTAssertTrue(both is MergedBroadcastingCentral)
    }

    /// Through a real PollController: a ballot both radios hear counts once; a voter only the second
    /// radio hears counts; a change heard first by one radio and repeated by the other counts once.
    func testABallotHeardByBothRadiosIsCountedOnce() async throws {
        let a = FakeRadio("hci0"), b = FakeRadio("hci1")
        let merged = MergedCentral([.init(name: "hci0", central: a), .init(name: "hci1", central: b)])
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let run = Task { try await controller.run(central: merged) }
        await controller.untilScanning()

        a.hear([ballot(voter: 1, .choice(0), at: 10)])
        b.hear([ballot(voter: 1, .choice(0), at: 11, rssi: -85), ballot(voter: 2, .choice(1), at: 12)])
        await until(controller, "three reports taken in") { await $0.reportsHeard == 3 }
        var r = await controller.results()
        XCTAssertEqual(r.voters, 2)
        XCTAssertEqual(r.counts[Answer.choice(0).description], 1, "heard by both radios, counted once")
        XCTAssertEqual(r.counts[Answer.choice(1).description], 1, "heard by the second radio only, counted")

        b.hear([ballot(voter: 1, sequence: 2, .choice(1), at: 20)])
        a.hear([ballot(voter: 1, sequence: 2, .choice(1), at: 21)])
        await until(controller, "five reports taken in") { await $0.reportsHeard == 5 }
        r = await controller.results()
        XCTAssertEqual(r.voters, 2)
        XCTAssertEqual(r.counts[Answer.choice(1).description], 2)
        XCTAssertEqual(r.changes, 1, "the change counted once, whichever radio heard it first")
        run.cancel()
        _ = try? await run.value
    }

    // MARK: GATT reads

    /// A read goes to the radio that heard the device last; when it fails, to the other.
    func testAReadAsksTheRadioThatHeardTheDeviceLastAndFallsBack() async throws {
        let a = FakeRadio("hci0"), b = FakeRadio("hci1"), c = FakeRadio("hci2")
        let merged = MergedCentral([.init(name: "hci0", central: a), .init(name: "hci1", central: b),
                                    .init(name: "hci2", central: c)])
        let device = DeviceAddress(rawValue: 5)
        a.serve(.success([0xA]), for: device)
        b.serve(.success([0xB]), for: device)
        c.serve(.success([0xC]), for: device)
        var it = merged.advertisementBatches(companyID: BallotFormat.companyID).makeAsyncIterator()

        a.hear([report(5, at: 10)])
        b.hear([report(5, at: 20)])
        _ = try await take(2, from: &it)
        var value = try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: .seconds(1))
        XCTAssertEqual(value, [0xB], "hci1 heard it last")

        a.hear([report(5, at: 30)])
        _ = try await take(1, from: &it)
        value = try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: .seconds(1))
        XCTAssertEqual(value, [0xA], "now hci0 heard it last")

        // hci0 fails the read: hci1, which heard it too, is asked next; hci2, which never heard it, is not.
        a.serve(.failure(.notConnected(device)), for: device)
        value = try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: .seconds(1))
        XCTAssertEqual(value, [0xB])
        XCTAssertEqual(a.reads.withLock { $0.count }, 2)
        XCTAssertEqual(b.reads.withLock { $0.count }, 2)
        XCTAssertEqual(c.reads.withLock { $0.count }, 0, "a radio that never heard the device is not asked while another did")

        // Both fail: the error of the radio asked first.
        b.serve(.failure(.timeout("read")), for: device)
        do {
            _ = try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: .seconds(1))
            XCTFail("both radios failed the read")
        } catch {
            XCTAssertEqual(error as? TransportError, .notConnected(device))
        }

        // A device no radio heard: every radio in order, until one answers.
        let unheard = DeviceAddress(rawValue: 6)
        c.serve(.success([0xC]), for: unheard)
        value = try await merged.readCharacteristic(device: unheard, service: service, characteristic: characteristic, timeout: .seconds(1))
        XCTAssertEqual(value, [0xC])
        XCTAssertEqual(a.reads.withLock { $0.last }, unheard)
        XCTAssertEqual(b.reads.withLock { $0.last }, unheard)
    }

    /// A radio without GATT client does not turn reads off while another radio has one: "unsupported"
    /// comes out only when every radio said it.
    func testUnsupportedOnlyWhenNoRadioCanRead() async throws {
        let a = FakeRadio("hci0"), b = FakeRadio("hci1")
        let merged = MergedCentral([.init(name: "hci0", central: a), .init(name: "hci1", central: b)])
        let device = DeviceAddress(rawValue: 9)
        a.serve(.failure(.unsupported("no GATT")), for: device)
        do {
            _ = try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: .seconds(1))
            XCTFail("hci1 cannot connect")
        } catch {
            XCTAssertEqual(error as? TransportError, .notConnected(device))
        }
        b.serve(.failure(.unsupported("no GATT either")), for: device)
        do {
            _ = try await merged.readCharacteristic(device: device, service: service, characteristic: characteristic, timeout: .seconds(1))
            XCTFail("no radio reads")
        } catch {
            XCTAssertEqual(error as? TransportError, .unsupported("no GATT"))
        }
    }

    // MARK: Failures and status

    /// One radio fails for good: the poll goes on counting what the other hears, and the status names the
    /// failed radio. The run ends with an error only when the second fails too.
    func testOneRadioFailingLeavesTheOtherCounting() async throws {
        let a = FakeRadio("hci0"), b = FakeRadio("hci1")
        let merged = MergedCentral([.init(name: "hci0", central: a), .init(name: "hci1", central: b)])
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let run = Task { try await controller.run(central: merged) }
        await controller.untilScanning()
        await until(controller, "both radios shown scanning") { await $0.radio.adapter == "hci0, hci1" }

        a.hear([ballot(voter: 1, .choice(0), at: 10)])
        a.queue.finish(throwing: TransportError.radioUnavailable("adapter removed"))
        await until(controller, "hci0 shown failed") { await $0.radio.adapter == "hci0 (failed), hci1" }
        let radio = await controller.radio
        XCTAssertEqual(radio.state, .scanning, "hci1 still scans")
        XCTAssertEqual(radio.lastError, "hci0: radio unavailable: adapter removed")
        let shown = await controller.viewModel().radio
        XCTAssertEqual(shown.adapter, "hci0 (failed), hci1", "the live view names the failed adapter")
        XCTAssertTrue(shown.scanning)
        XCTAssertEqual(shown.lastError, "hci0: radio unavailable: adapter removed")

        b.hear([ballot(voter: 2, .choice(1), at: 20)])
        await until(controller, "hci1's ballot counted") { await $0.results().voters == 2 }
        let r = await controller.results()
        XCTAssertEqual(r.counts[Answer.choice(0).description], 1, "what hci0 heard before it failed stays counted")
        XCTAssertEqual(r.counts[Answer.choice(1).description], 1)

        b.queue.finish(throwing: TransportError.radioUnavailable("unplugged"))
        do {
            try await run.value
            XCTFail("every radio failed: the run ends with an error")
        } catch {
            XCTAssertEqual(error as? TransportError, .radioUnavailable("adapter removed"), "the first failure")
        }
        var last: RadioStatus?
        for await s in merged.status() { last = s; break }
        XCTAssertEqual(last?.adapter, "hci0 (failed), hci1 (failed)")
        XCTAssertEqual(last?.state, .stopped)
    }

    /// The merged status, from each radio's: scanning while one scans; each radio not scanning says its state.
    func testTheStatusSaysWhichRadioScansAndWhichFailed() {
        var s = MergedRadioStatus(names: ["hci0", "hci1"])
        XCTAssertEqual(s.combined, RadioStatus(adapter: "hci0 (starting), hci1 (starting)", state: .starting))
        s.radios[1] = RadioStatus(adapter: "hci1", state: .scanning, lastDiscoveryRestart: RadioInstant(nanoseconds: 5))
        s.radios[0] = RadioStatus(adapter: "hci0", state: .recovering, lastError: "bluetoothd left the bus")
        XCTAssertEqual(s.combined, RadioStatus(adapter: "hci0 (recovering), hci1", state: .scanning,
                                               lastDiscoveryRestart: RadioInstant(nanoseconds: 5),
                                               lastError: "hci0: bluetoothd left the bus"))
        s.radios[1].state = .stopped
        XCTAssertEqual(s.combined.state, .recovering)
        s.broadcastFailures[1] = "refused"
        XCTAssertEqual(s.combined.lastError, "hci0: bluetoothd left the bus; hci1 beacon: refused")
    }

    // MARK: Broadcasting

    /// The payload goes out on every radio that broadcasts while it scans; the capabilities are what all
    /// of them can; one radio refusing does not stop the other, and the status names it.
    func testTheBeaconGoesOutOnEveryRadio() async throws {
        let a = FakeBroadcastingRadio("hci0", capabilities: .extended)
        let b = FakeBroadcastingRadio("hci1", capabilities: BroadcastCapabilities.legacy.withFrameTime(slack: .milliseconds(40)))
        let old = FakeBroadcastingRadio("hci2", capabilities: BroadcastCapabilities(maxFrameLength: 27, extended: false, whileScanning: false))
        let plain = FakeRadio("hci3")
        let merged = try XCTUnwrap(MergedCentral.combining([.init(name: "hci0", central: a), .init(name: "hci1", central: b),
                                                            .init(name: "hci2", central: old), .init(name: "hci3", central: plain)])
                                   as? MergedBroadcastingCentral)
        let caps = try await merged.broadcastCapabilities()
        XCTAssertEqual(caps.maxFrameLength, 27, "frames every radio takes")
        XCTAssertFalse(caps.extended)
        XCTAssertTrue(caps.whileScanning)
        XCTAssertEqual(caps.frameTime(interval: .milliseconds(100)), .milliseconds(140), "the slowest radio's frame time")

        let payload = BroadcastPayload(companyID: BallotFormat.companyID, frames: [[1, 2, 3]])
        try await merged.broadcast(payload)
        XCTAssertEqual(a.payloads.withLock { $0 }, [payload])
        XCTAssertEqual(b.payloads.withLock { $0 }, [payload])
        XCTAssertEqual(old.payloads.withLock { $0 }, [], "a radio that cannot broadcast while it scans is left out")

        let status = merged.status()
        b.refusal.withLock { $0 = .unsupported("frame too long") }
        try await merged.broadcast(payload)
        XCTAssertEqual(a.payloads.withLock { $0.count }, 2, "hci0 took it although hci1 refused")
        var shown: RadioStatus?
        for await s in status where s.lastError != nil { shown = s; break }
        XCTAssertEqual(shown?.lastError, "hci1 beacon: not supported by this radio: frame too long")

        a.refusal.withLock { $0 = .radioUnavailable("off") }
        do {
            try await merged.broadcast(payload)
            XCTFail("no radio took the payload")
        } catch {
            XCTAssertEqual(error as? TransportError, .radioUnavailable("off"), "hci0's error, the first radio's")
        }
        try await merged.stopBroadcasting()
        XCTAssertEqual(a.stops.withLock { $0 } + b.stops.withLock { $0 } + old.stops.withLock { $0 }, 3)
    }

    /// Through a real PollController: its beacon reaches both radios.
    func testThePollsBeaconReachesBothRadios() async throws {
        let a = FakeBroadcastingRadio("hci0"), b = FakeBroadcastingRadio("hci1")
        let merged = MergedCentral.combining([.init(name: "hci0", central: a), .init(name: "hci1", central: b)])
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let run = Task { try await controller.run(central: merged) }
        var tookA = a.took.makeAsyncIterator(), tookB = b.took.makeAsyncIterator()
        _ = await tookA.next()
        _ = await tookB.next()
        run.cancel()
        _ = try? await run.value
        let (pa, pb) = (a.payloads.withLock { $0 }, b.payloads.withLock { $0 })
        XCTAssertFalse(pa.isEmpty)
        XCTAssertEqual(pa.first, pb.first, "the same payload on both radios")
        XCTAssertTrue(pa.first.map { $0.frames.contains { BeaconFormat.isBeacon($0) } } ?? false)
    }

    /// The table of which radio heard which device stays bounded as addresses come and go.
    func testTheHeardTableForgetsDevicesNotHeardForLong() async throws {
        let a = FakeRadio("hci0"), b = FakeRadio("hci1")
        let merged = MergedCentral([.init(name: "hci0", central: a), .init(name: "hci1", central: b)])
        var it = merged.advertisementBatches(companyID: BallotFormat.companyID).makeAsyncIterator()
        // 20,000 addresses, one every 10 ms (200 s): only those of the last 120 s, and what the pruning
        // has not reached yet, may be kept.
        for k in 0..<200 {
            a.hear((0..<100).map { j in report(UInt64(k * 100 + j), at: UInt64((k * 100 + j) * 10)) })
            _ = try await take(100, from: &it)
        }
        // The table was pruned at 16,384 devices (at 163.8 s: those of the last 120 s kept, 12,000), then
        // grew by the 3,616 heard since.
        let kept = merged.devicesRemembered
        XCTAssertTrue((12_000...16_000).contains(kept), "\(kept) devices remembered")
    }
}
