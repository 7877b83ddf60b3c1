@testable import BlueZ
import ClickerTestSupport
import ClickerTransport
import DBus
import Foundation
import Synchronization
import XCTest

/// Tier 2: the central's GATT client (connect, wait for the services on events, read, disconnect).
extension BlueZCentralTests {
    func testReadsBallotCharacteristic() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        // A full signed ballot's size (142 bytes), zeros and 0xFF included.
        let ballot: [UInt8] = (0..<139).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) } + [0, 0, 0xFF]
        try await mock.addCharacteristic(Self.voter1, service: Self.service,
                                         characteristic: UUID128("6e400003-b5a3-f393-e0a9-e50e24dcca9e")!, value: [0])
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: ballot)
        let central = makeCentral()
        let value = try await central.readCharacteristic(device: DeviceAddress(Self.voter1)!, service: Self.service,
                                                         characteristic: Self.ballotChar, timeout: .seconds(5))
        XCTAssertEqual(value, ballot)
        let dev: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01"
        let calls = try await mock.calls(dev)
        XCTAssertEqual(calls.filter { $0 == "Connect" }.count, 1)
        XCTAssertEqual(calls.last, "Disconnect")
        let v5 = try await mock.property(dev, "org.bluez.Device1", "Connected")
        XCTAssertEqual(v5.unwrapped, .boolean(false))
    }

    /// bluetoothd 5.66 may set ServicesResolved before announcing the GATT objects (seen in the QEMU
    /// guest): the read parks until the characteristic's InterfacesAdded, however late within its timeout.
    func testReadWaitsForCharacteristicAnnouncedAfterServicesResolved() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        let central = makeCentral()
        let device = DeviceAddress(Self.voter1)!, service = Self.service, char = Self.ballotChar
        let read = Task {
            try await central.readCharacteristic(device: device, service: service, characteristic: char,
                                                 timeout: .seconds(20))
        }
        // Connected, services resolved, and parked waiting for the characteristic: only then announce it.
        try await eventually("the read waiting for the characteristic") { central.engine.parkedReads(.characteristic) == 1 }
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [7, 7])
        let value = try await read.value
        XCTAssertEqual(value, [7, 7])
    }

    /// bluetoothd 5.66 in the QEMU guest resolved the services of links whose Connected never turned true:
    /// the read goes by ServicesResolved and reads the ballot on the first connection.
    func testReadsWhenServicesResolveButConnectedNeverTurnsTrue() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        try await mock.setConnectBehaviour(Self.voter1, "silent")
        let central = makeCentral()
        let device = DeviceAddress(Self.voter1)!, service = Self.service, char = Self.ballotChar
        let read = Task {
            try await central.readCharacteristic(device: device, service: service, characteristic: char, timeout: .seconds(20))
        }
        try await eventually("the read waiting for the characteristic") { central.engine.parkedReads(.characteristic) == 1 }
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [9])
        let value = try await read.value
        XCTAssertEqual(value, [9])
        let calls = try await mock.calls("/org/bluez/hci0/dev_00_AA_01_00_00_01")
        XCTAssertEqual(calls.filter { $0 == "Connect" }.count, 1)
    }

    /// ServicesResolved is awaited as an event: the read parks until the device's PropertiesChanged.
    func testReadWaitsForServicesResolved() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [4, 2])
        try await mock.setConnectBehaviour(Self.voter1, "unresolved")
        let central = makeCentral()
        let device = DeviceAddress(Self.voter1)!, service = Self.service, char = Self.ballotChar
        let read = Task {
            try await central.readCharacteristic(device: device, service: service, characteristic: char,
                                                 timeout: .seconds(20))
        }
        try await eventually("the read waiting for the services") { central.engine.parkedReads(.servicesResolved) == 1 }
        try await mock.setConnection(Self.voter1, connected: true, resolved: true)
        let value = try await read.value
        XCTAssertEqual(value, [4, 2])
    }

    /// A link that drops while the services resolve fails the read at once, not at its timeout.
    func testALinkLostWhileResolvingFailsTheReadAtOnce() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [1])
        try await mock.setConnectBehaviour(Self.voter1, "unresolved")
        let central = makeCentral()
        let device = DeviceAddress(Self.voter1)!, service = Self.service, char = Self.ballotChar
        let read = Task {
            try await central.readCharacteristic(device: device, service: service, characteristic: char,
                                                 timeout: .seconds(60))
        }
        let path: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01"
        try await eventually("the read waiting for the services of a connected device") {
            central.engine.parkedReads(.servicesResolved) == 1
                && central.engine.state.withLock { $0.mirror.bool(path, "org.bluez.Device1", "Connected") } == true
        }
        let dropped = ContinuousClock.now
        try await mock.setConnection(Self.voter1, connected: false, resolved: false)
        do {
            _ = try await read.value
            XCTFail("a read over a lost link returned a value")
        } catch {
            XCTAssertEqual(error as? TransportError, .notConnected(device))
        }
        XCTAssertLessThan(ContinuousClock.now - dropped, .seconds(30), "the read waited for its timeout")
    }

    func testGattReadFailuresAreTypedAndBounded() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [1])
        let central = makeCentral()
        let device = DeviceAddress(Self.voter1)!

        func read(_ timeout: Duration = .milliseconds(600), char: UUID128 = BlueZCentralTests.ballotChar,
                  device: DeviceAddress = DeviceAddress(BlueZCentralTests.voter1)!) async -> (any Error)? {
            do {
                _ = try await central.readCharacteristic(device: device, service: Self.service, characteristic: char,
                                                         timeout: timeout)
                return nil
            } catch { return error }
        }

        // Connected, but services never resolve. (A Connect that never answers:
        // testAnUnansweredConnectTimesOutOnTheBackendsClock.)
        try await mock.setConnectBehaviour(Self.voter1, "unresolved")
        var start = ContinuousClock.now
        var err = await read()
        guard case .timeout? = err as? TransportError else { return XCTFail("unresolved: \(String(describing: err))") }
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(3))

        // Connect fails.
        try await mock.setConnectBehaviour(Self.voter1, "fail")
        err = await read()
        XCTAssertEqual(err as? TransportError, .notConnected(device))

        // Wrong characteristic: looked for until the read's own deadline (no window of its own), then
        // reported as missing, not as a timeout.
        try await mock.setConnectBehaviour(Self.voter1, "ok")
        let missing = UUID128("6e4000ff-b5a3-f393-e0a9-e50e24dcca9e")!
        start = ContinuousClock.now
        err = await read(.milliseconds(700), char: missing)
        XCTAssertEqual(err as? TransportError, .characteristicNotFound(missing))
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(3))

        // ReadValue refused: BlueZ's error, told apart from a failed connection.
        try await mock.setReadError(Self.voter1, "NotPermitted")
        err = await read(.seconds(5))
        guard case .rejected(_, let refusal)? = err as? BlueZError else { return XCTFail("refused read: \(String(describing: err))") }
        XCTAssertEqual(refusal.name, "org.bluez.Error.NotPermitted")
        try await mock.setReadError(Self.voter1, "")

        // Unknown device.
        let stranger = DeviceAddress("00:AA:09:09:09:09")!
        err = await read(.seconds(2), device: stranger)
        XCTAssertEqual(err as? TransportError, .notConnected(stranger))

        // And a good read still works afterwards.
        let last = await read(.seconds(5))
        XCTAssertNil(last)
    }

    /// A read's deadline is on the backend's clock (`BlueZCentralOptions.clock`): a read of an hour
    /// whose services never resolve is still waiting when a test clock stands 1 ms short of its hour,
    /// and fails as a timeout as soon as the clock reaches it (a minute of wall time is only the bound
    /// for a broken read that waits on the wall clock; a working one ends at once).
    func testAReadTimesOutOnTheBackendsClock() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [1])
        try await mock.setConnectBehaviour(Self.voter1, "unresolved")
        let testClock = TestClock()
        let central = makeCentral { $0.clock = RadioClock(testClock) }
        let (read, finished) = startRead(central, timeout: .seconds(3600))
        try await eventually("the read waiting for the services") { central.engine.parkedReads(.servicesResolved) == 1 }
        testClock.advance(by: .seconds(3600) - .milliseconds(1))
        for _ in 0..<100 { await Task.yield() }
        XCTAssertFalse(finished.isSet, "the read gave up before its deadline")
        XCTAssertEqual(central.engine.parkedReads(.servicesResolved), 1)
        testClock.advance(by: .milliseconds(1))
        let error = await endOf(read)
        guard case .timeout? = error as? TransportError else { return XCTFail("not a timeout: \(String(describing: error))") }
    }

    /// A Connect that bluetoothd never answers times out on the backend's clock too: the central's
    /// D-Bus connection reads its calls' deadlines on that clock. With a test clock 1 ms short of the
    /// read's hour the read is still waiting (after a round trip on that connection, so its dispatch
    /// thread has looked at the deadlines since the clock moved); at the hour it fails as a timeout at
    /// once.
    func testAnUnansweredConnectTimesOutOnTheBackendsClock() async throws {
        try await mock.addAdapter()
        try await mock.addDevice(Self.voter1)
        try await mock.addCharacteristic(Self.voter1, service: Self.service, characteristic: Self.ballotChar, value: [1])
        try await mock.setConnectBehaviour(Self.voter1, "hang")
        let testClock = TestClock()
        let central = makeCentral { $0.clock = RadioClock(testClock) }
        let (read, finished) = startRead(central, timeout: .seconds(3600))
        let device: DBusObjectPath = "/org/bluez/hci0/dev_00_AA_01_00_00_01"
        try await eventually("Connect at bluetoothd") { try await self.mock.calls(device).contains("Connect") }
        testClock.advance(by: .seconds(3600) - .milliseconds(1))
        let connection = try XCTUnwrap(central.engine.state.withLock { $0.connection })
        _ = try await connection.nameOwner(BlueZ.service)
        XCTAssertFalse(finished.isSet, "the read gave up before its deadline")
        testClock.advance(by: .milliseconds(1))
        let error = await endOf(read)
        guard case .timeout(let what)? = error as? TransportError else { return XCTFail("not a timeout: \(String(describing: error))") }
        XCTAssertTrue(what.hasPrefix("connecting to"), what)
    }

    /// Reads the ballot characteristic of voter 1 in a task that sets `Finished` when it ends.
    private func startRead(_ central: BlueZCentral, timeout: Duration) -> (Task<(any Error)?, Never>, Finished) {
        let device = DeviceAddress(Self.voter1)!, service = Self.service, char = Self.ballotChar
        let finished = Finished()
        let read = Task { () -> (any Error)? in
            defer { finished.set() }
            do {
                _ = try await central.readCharacteristic(device: device, service: service, characteristic: char,
                                                         timeout: timeout)
                return nil
            } catch { return error }
        }
        return (read, finished)
    }

    /// How `read` ended, once the clock has reached its deadline: a minute of wall time is only the
    /// bound for a broken read that waits on the wall clock (the test fails then); a working one ends
    /// at once.
    private func endOf(_ read: Task<(any Error)?, Never>) async -> (any Error)? {
        let ended = await withTaskGroup(of: Bool.self) { group in
            group.addTask { _ = await read.value; return true }
            group.addTask { try? await Task.sleep(for: .seconds(60)); return false }
            let first = await group.next() ?? false
            if !first { read.cancel() }   // a read waiting on the wall clock: end it, so that the test ends
            group.cancelAll()
            return first
        }
        XCTAssertTrue(ended, "the read did not end when the backend's clock reached its deadline")
        return await read.value
    }

    func testParallelReadsAreBounded() async throws {
        try await mock.addAdapter()
        let n = 6
        for i in 1...n {
            let a = String(format: "00:AA:03:00:00:%02X", i)
            try await mock.addDevice(a)
            try await mock.setConnectBehaviour(a, "ok", resolveDelayMs: 300)
            try await mock.addCharacteristic(a, service: Self.service, characteristic: Self.ballotChar, value: [UInt8(i)])
        }
        let central = makeCentral { $0.maxConcurrentConnections = 2 }
        let values = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in 1...n {
                group.addTask {
                    let a = DeviceAddress(String(format: "00:AA:03:00:00:%02X", i))!
                    return (i, try await central.readCharacteristic(device: a, service: Self.service,
                                                                   characteristic: Self.ballotChar, timeout: .seconds(10)))
                }
            }
            var out: [Int: [UInt8]] = [:]
            for try await (i, v) in group { out[i] = v }
            return out
        }
        for i in 1...n { XCTAssertEqual(values[i], [UInt8(i)]) }
        // Six reads of at least 300 ms each, started together: two at a time, never more.
        XCTAssertEqual(central.statistics.peakConcurrentReads, 2)
    }
}

/// Set when a task has finished (shared with it).
private final class Finished: Sendable {
    private let flag = Atomic<Bool>(false)
    func set() { flag.store(true, ordering: .sequentiallyConsistent) }
    var isSet: Bool { flag.load(ordering: .sequentiallyConsistent) }
}
