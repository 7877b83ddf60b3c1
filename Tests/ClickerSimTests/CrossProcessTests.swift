#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import ClickerTestSupport
import ClickerTransport
import OSThreads
import Synchronization
import XCTest

/// The air across two processes: this test runs this very test binary again as the peripheral.
final class CrossProcessTests: XCTestCase {
    static let childPathVariable = "CLICKER_SIM_CHILD_AIR"
    static let listenerPathVariable = "CLICKER_SIM_CHILD_LISTENER"

    /// The tally's process broadcasts; a voter process listens through the socket and, once it has heard
    /// the broadcast, advertises the frame it heard, which the tally's scanner then hears.
    func testListenerInAnotherProcessHearsTheBroadcast() async throws {
        if let path = getenv(Self.listenerPathVariable).map({ String(cString: $0) }) {
            let p = try await SimulatedAir.connect(path: path, address: DeviceAddress(rawValue: 0x00AA_0100_0778), rssi: -55)
            try await p.advertise(payload(778, interval: .milliseconds(20)))
            let beacon = try await p.startListening(companyID: 0x0A0A, dutyCycle: .fast)
            for try await r in beacon where r.data.first == 0xB0 {
                try await p.advertise(AdvertisingPayload(companyID: companyID, data: r.data, interval: .milliseconds(20)))
                break
            }
            for await s in p.status() where s.state == .stopped && s.lastError != nil { break }
            return
        }
        let air = SimulatedAir(AirConfiguration(seed: 62, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("cross-listen")
        let host = try air.host(path: path)
        defer { host.close() }
        let central = air.central()
        try await central.broadcast(BroadcastPayload(companyID: 0x0A0A, frames: [[0xB0, 1], [0xB0, 2]], interval: .milliseconds(30)))
        let pid = try spawnChild(test: "testListenerInAnotherProcessHearsTheBroadcast", env: "\(Self.listenerPathVariable)=\(path)")
        var reaped = false
        defer {
            if !reaped {
                kill(pid, SIGKILL)
                var st: Int32 = 0
                waitpid(pid, &st, 0)
            }
        }
        let child = DeviceAddress(rawValue: 0x00AA_0100_0778)
        let heard = Task {
            for try await r in central.advertisements(companyID: companyID) where r.address == child && r.data.first == 0xB0 {
                return r.data
            }
            return []
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            heard.cancel()
        }
        let data = try await heard.value
        timeout.cancel()
        XCTAssertTrue(data == [0xB0, 1] || data == [0xB0, 2], "the child heard a broadcast frame: \(data)")
        XCTAssertGreaterThan(air.statistics.listenerReportsDelivered, 0)
        host.close()  // the child sees the air vanish and its test ends
        let status = try await reap(pid)
        reaped = true
        XCTAssertEqual(status, 0, "child test process exit status (\(SIGKILL) when it did not end within 20 s)")
    }

    func testPeripheralInAnotherProcess() async throws {
        if let path = getenv(Self.childPathVariable).map({ String(cString: $0) }) {
            try await actAsPeripheral(path: path)
        } else {
            try await actAsCentral()
        }
    }

    /// Child: joins the air, advertises and serves a value, stays until the host goes away.
    private func actAsPeripheral(path: String) async throws {
        let p = try await SimulatedAir.connect(path: path, address: DeviceAddress(rawValue: 0x00AA_0100_0777), rssi: -55)
        try await p.advertise(payload(777, interval: .milliseconds(20)))
        try await p.publish(service: service, characteristic: ballot, value: Array("from pid \(getpid())".utf8))
        for await s in p.status() where s.state == .stopped && s.lastError != nil { break }
    }

    /// Parent: hosts the air, spawns the child, hears it and reads from it, then closes the air.
    private func actAsCentral() async throws {
        let air = SimulatedAir(AirConfiguration(seed: 61, clock: .realTime()))
        defer { air.stop() }
        let path = tempSocketPath("cross")
        let host = try air.host(path: path)
        defer { host.close() }

        let pid = try spawnChild(test: "testPeripheralInAnotherProcess", env: "\(Self.childPathVariable)=\(path)")
        var reaped = false
        defer {
            // Never leave the child behind, whatever failed.
            if !reaped {
                kill(pid, SIGKILL)
                var st: Int32 = 0
                waitpid(pid, &st, 0)
            }
        }

        let child = DeviceAddress(rawValue: 0x00AA_0100_0777)
        let heard = Task {
            for try await r in air.central().advertisements(companyID: companyID) where r.address == child {
                return r.data
            }
            return []
        }
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            heard.cancel()
        }
        let data = try await heard.value
        timeout.cancel()
        XCTAssertEqual(data, payload(777).data, "the child's advertisement was heard")
        let value = try await air.central().readCharacteristic(device: child, service: service, characteristic: ballot, timeout: .seconds(5))
        XCTAssertEqual(String(decoding: value, as: UTF8.self), "from pid \(pid)")

        host.close()  // the child sees the air vanish and its test ends
        let status = try await reap(pid)
        reaped = true
        XCTAssertEqual(status, 0, "child test process exit status (\(SIGKILL) when it did not end within 20 s)")
        XCTAssertFalse(air.devices.contains(child))
    }
}

/// Runs `test` of this test binary in a child process with `env` set; output goes to /dev/null.
private func spawnChild(test: String, env variable: String) throws -> pid_t {
    try ChildTestProcess.spawn("ClickerSimTests.CrossProcessTests/\(test)", environment: [variable])
}

/// Waits for the child on a thread of its own (waitpid blocks); kills it when it is still there after 20 s.
/// Returns its wait status.
private func reap(_ pid: pid_t) async throws -> Int32? {
    let exit = Mutex<Int32?>(nil)
    let reaper = try XCTUnwrap(OSThread.start(name: "reaper") {
        var st: Int32 = 0
        let r = waitpid(pid, &st, 0)
        exit.withLock { $0 = r == pid ? st : -1 }
    })
    let watchdog = Task {
        try await Task.sleep(for: .seconds(20))
        kill(pid, SIGKILL)
    }
    await reaper.finished()
    watchdog.cancel()
    return exit.withLock { $0 }
}
