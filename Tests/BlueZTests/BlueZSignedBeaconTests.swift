import ClickerTestSupport
@testable import BlueZ
import ClickerTally
import ClickerTransport
import ClickerWire
import DBus
import Foundation
import Logging
import Synchronization
import Voter
import XCTest

/// Tier 2: the signed beacon (protocol version 4) through BlueZ. The tally's beacon (`BlueZCentral` as
/// `BroadcasterTransport`, frames composed by `TallyBeacon` and signed as the daemon signs them) broadcasts
/// extended frames on hci0 of the bluetoothd stand-in; what it applies is put on the air of hci1, where a
/// voter (`BeaconFollowService` on a `BlueZPeripheral`) hears it as `Device1` `ManufacturerData`
/// `PropertiesChanged` signals. A classmate with the join code then sends hundreds of forged frames through
/// the same signals, and the voter takes none of them.
final class BlueZSignedBeaconTests: XCTestCase {
    var bus: PrivateBus!
    var mock: BlueZMock!

    static let tallyAir = "00:BB:02:00:00:01"
    static let forgerAir = "00:BB:02:00:00:66"

    override func setUp() async throws {
        bus = try PrivateBus()
        mock = try await BlueZMock(bus: bus, parameters: #"{"ext_ad_len": 251}"#)
        try await mock.addAdapter("hci0")  // the tally's
        try await mock.addAdapter("hci1")  // the voter's
    }

    override func tearDown() async throws {
        mock?.kill()
        mock = nil
        bus?.stop()
        bus = nil
    }

    func testAVoterFollowsTheSignedBeaconAndIgnoresHundredsOfForgedFrames() async throws {
        // The tally's poll: its key pair, and the join code that commits to it (docs/PROTOCOL.md §11.2).
        let signer = try XCTUnwrap(BeaconSigner(seed: (0..<32).map { UInt8($0 &* 7 &+ 3) }))
        let code = BeaconAnchor.joinCode(voteID: 0x2A1, publicKey: signer.publicKey)
        let secret = PollSecret(deriving: code)
        let key = BeaconKey(secret)

        // The tally's radio: extended frames, as bluetoothd with MaxAdvLen 251 takes them.
        var o = BlueZCentralOptions(bus: bus.target, adapter: .name("hci0"), discoveryRestartInterval: nil,
                                    staleDeviceTimeout: nil, callTimeout: .seconds(5), retryInterval: .milliseconds(200))
        o.beaconMinimumDwell = .milliseconds(20)
        let central = BlueZCentral(options: o)
        let caps = try await central.broadcastCapabilities()
        XCTAssertTrue(caps.extended)
        var composer = TallyBeacon(key: key, mode: .anonymous, capabilities: caps, signer: signer, deferSignatures: true)
        var tick: UInt32 = 1000
        func send(_ question: UInt8) async throws -> [UInt8] {
            tick += 100
            var p = composer.payload(.open(BeaconQuestionInfo(number: question, kind: .single, options: 4)), tick: tick, at: UInt64(tick) * 10_000_000)
            XCTAssertGreaterThan(BeaconSigning.sign(&p, signer: signer, voteID: key.voteID), 0, "the daemon's frames are signed")
            try await central.broadcast(p)
            return try XCTUnwrap(p.frames.first { $0.count == BeaconFormat.signedStateLength })
        }

        // The air between the two adapters: every frame bluetoothd applied on hci0 is heard on hci1.
        try await mock.addDevice(Self.tallyAir, adapter: "hci1")
        try await mock.addDevice(Self.forgerAir, adapter: "hci1")
        let mock = self.mock!
        let relayed = Count()
        let relay = Self.relay(mock, counting: relayed)
        defer { relay.cancel() }

        // The voter: follows the beacon through BlueZ, and a second subscriber on its radio that counts what
        // the same admission rules refuse.
        let voter = BlueZPeripheral(options: BlueZPeripheralOptions(bus: bus.target, adapter: .name("hci1"), callTimeout: .seconds(5)))
        let (shown, sink) = AsyncStream<String>.makeStream()
        let lines = Collector(shown)
        let logged = LogLines()
        let service = BeaconFollowService(secret: secret, identity: DeviceKey.generate(), roster: false, transport: voter,
                                          state: nil, lines: AsyncStream { _ in }, report: { sink.yield($0.line) },
                                          logger: Logger(label: "test", factory: { _ in logged }),
                                          tick: .seconds(3600), start: .immediate)
        let run = Task { try await service.run() }
        defer { run.cancel() }
        let status = Collector(voter.listenerStatus())
        try await status.wait("scanning") { $0.last?.state == .scanning }
        let refusedCount = Count(), heardCount = Count()
        let counting = Self.count(voter.listen(companyID: BallotFormat.companyID, dutyCycle: .fast), key: key,
                                  heard: heardCount, refused: refusedCount)
        defer { counting.cancel() }

        let real = try await send(1)
        try await lines.wait("question 1 from the signed beacon", timeout: .seconds(20)) { $0.contains("question 1 single 4") }
        try await eventually("the voter logs that the beacon is signed", timeout: .seconds(10)) {
            logged.messages.contains { $0.contains("the beacon is signed") }
        }
        XCTAssertGreaterThan(relayed.value, 0)

        // The forger holds the join code (the tag key, the key mask) but not the tally's private key.
        let forger = BeaconSigner.random()
        let realState = try XCTUnwrap(BeaconCodec.envelope(real, key: key).get().frame.stateValue)
        let hiddenReal = try XCTUnwrap(realState.hiddenKey)
        let hiddenForger = try XCTUnwrap(key.hide(forger.publicKey))
        let q9 = BeaconQuestion(number: 9, kind: .single, options: 8)
        let realCounter = realState.counter
        var forged: [[UInt8]] = []
        for i in 0..<300 {
            let ahead = realCounter &+ 1_000_000 &+ UInt32(i)
            let s = { (hidden: [UInt8]) in
                BeaconState(voteID: key.voteID, counter: ahead, mode: .anonymous, poll: .open(q9),
                            interval: BeaconInterval(milliseconds: 100) ?? .stop, hiddenKey: hidden)
            }
            switch i % 4 {
            case 0:  // the tally's hidden key, the forger's signature
                forged.append(try BeaconCodec.seal(.state(s(hiddenReal)), key: key, signer: forger))
            case 1:  // the forger's own key, which the join code does not commit to
                forged.append(try BeaconCodec.seal(.state(s(hiddenForger)), key: key, signer: forger))
            case 2:  // the tally's own frame replayed with its counter far ahead (tag made again, signature kept)
                var st = realState
                st.counter = ahead
                forged.append(try BeaconCodec.draft(.state(st), key: key) + real.suffix(BeaconFormat.signatureLength))
            default:  // a tagged frame, which a voter that knows the poll's key never takes (no downgrade)
                forged.append(try BeaconCodec.seal(BeaconState(voteID: key.voteID, counter: ahead, mode: .anonymous, poll: .open(q9),
                                                               interval: BeaconInterval(milliseconds: 100) ?? .stop), key: key))
            }
        }
        XCTAssertEqual(Set(forged).count, forged.count)
        let refusedBefore = refusedCount.value
        for f in forged { try await mock.advertise(Self.forgerAir, data: f, adapter: "hci1") }
        try await eventually("every forged frame heard and refused", timeout: .seconds(30)) {
            refusedCount.value - refusedBefore >= forged.count
        }
        XCTAssertEqual(refusedCount.value - refusedBefore, forged.count, "only the forged frames are refused")

        // The tally moves on: the voter follows it to question 2 and never showed the forger's question 9.
        _ = try await send(2)
        let seen = try await lines.wait("question 2 from the signed beacon", timeout: .seconds(20)) { $0.contains("question 2 single 4") }
        XCTAssertFalse(seen.contains { $0.contains("question 9") }, "a forged frame was taken: \(seen)")
        XCTAssertFalse(logged.messages.contains { $0.contains("contradict") }, "the forged frames made the voter listen again")
        XCTAssertGreaterThan(heardCount.value, forged.count)

        run.cancel()
        _ = try? await run.value
        counting.cancel()
        relay.cancel()
        try await central.stopBroadcasting()
        await central.shutdown()
        await voter.shutdown()
    }
}

extension BlueZSignedBeaconTests {
    /// The air from hci0 to hci1: every frame bluetoothd applied to the beacon on hci0 becomes the
    /// ManufacturerData of the tally's device on hci1 (a PropertiesChanged signal to the voter).
    static func relay(_ mock: BlueZMock, counting relayed: Count) -> Task<Void, Never> {
        Task {
            var next = 0
            while !Task.isCancelled {
                let applied = await appliedFrames(mock)
                for frame in applied.dropFirst(next) {
                    try? await mock.advertise(tallyAir, data: frame, adapter: "hci1")
                    relayed.add()
                }
                next = max(next, applied.count)
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Runs what a voter lets in (``BeaconAdmission``) on `reports`, counting the frames heard and refused.
    static func count(_ reports: AsyncThrowingStream<AdvertisementReport, any Error>, key: BeaconKey,
                      heard: Count, refused: Count) -> Task<Void, Never> {
        Task {
            var admission = BeaconAdmission(key: key)
            let clock = ElapsedClock(ContinuousClock())
            do {
                for try await r in reports {
                    heard.add()
                    if case .refused = admission.admit(r.data, at: clock.now.offset) { refused.add() }
                }
            } catch {}
        }
    }

    /// The beacon's frames (company 0xFFFF) as bluetoothd applied them on hci0, in order.
    static func appliedFrames(_ mock: BlueZMock) async -> [[UInt8]] {
        let reply = try? await mock.mock("GetAdvertisementHistory", [.string("hci0"), .objectPath(BlueZBeaconTests.beaconPath)])
        guard let args = try? reply?.arguments(), case .array(_, let entries)? = args.first else { return [] }
        var frames: [[UInt8]] = []
        for entry in entries {
            guard case .array(_, let pairs) = entry else { continue }
            for pair in pairs {
                if case .structure(let f) = pair, f.count == 2, case .bytes(let b) = f[1] { frames.append(b) }
            }
        }
        return frames
    }
}

extension BeaconFrame {
    var stateValue: BeaconState? { if case .state(let s) = self { s } else { nil } }
}

/// A counter shared with a task.
final class Count: Sendable {
    private let n = Mutex(0)
    var value: Int { n.withLock { $0 } }
    func add() { n.withLock { $0 += 1 } }
}

