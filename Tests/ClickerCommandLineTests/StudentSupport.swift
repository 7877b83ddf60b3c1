#if canImport(Glibc)
import Glibc
#endif
import ClickerSim
import ClickerTransport
import ClickerWire
import Foundation
import Synchronization
import TerminalTestSupport
import Voter
import XCTest

/// A tally's beacon that a test drives frame by frame on a simulated air hosted on a socket, for
/// `clicker-vote --radio sim` processes to hear.
final class TestBeacon: Sendable {
    let air: SimulatedAir
    let host: AirHost
    let path: String
    let code: JoinCode
    let key: BeaconKey
    let tally: SimulatedCentral
    private let counter: Mutex<UInt32>

    /// `counter`: the STATE counter the frames go on from (a restarted tally's goes on from its own).
    init(code: JoinCode, name: String, counter: UInt32 = 1) throws {
        self.counter = Mutex(counter)
        air = SimulatedAir(AirConfiguration(seed: 5, clock: .realTime()))
        path = "/tmp/clicker-cli-test-\(getpid())-\(name).sock"
        unlink(path)
        host = try air.host(path: path)
        self.code = code
        key = BeaconKey(PollSecret(deriving: code))
        tally = air.central()
    }

    func close() {
        host.close()
        air.stop()
    }

    var lastCounter: UInt32 { counter.withLock { $0 } }

    func next() -> UInt32 { counter.withLock { $0 += 1; return $0 } }

    func state(_ poll: BeaconPoll, _ ms: Int?, mode: BallotMode = .anonymous) throws -> [UInt8] {
        try BeaconCodec.seal(.state(BeaconState(voteID: key.voteID, counter: next(), mode: mode, poll: poll,
                                                interval: ms.flatMap { BeaconInterval(milliseconds: $0) } ?? .stop)),
                             key: key)
    }

    func acks(_ question: UInt8, voterID: UInt32, sequence: UInt16) throws -> [UInt8] {
        try BeaconCodec.seal(.acks(BeaconAcks(counter: next(), question: question, fingerprints: [
            key.fingerprint(voterID: voterID, question: question, sequence: sequence)])), key: key)
    }

    /// A question with `text` and the TEXT pages that carry it (legacy frames: 27 bytes after the company ID).
    func question(_ number: UInt8, _ kind: QuestionKind, options: UInt8, text: QuestionText) throws
        -> (BeaconQuestion, [[UInt8]]) {
        let block = try XCTUnwrap(text.block)
        let chunks = try XCTUnwrap(QuestionText.chunks(block, chunkLength: BeaconFormat.chunkLength(fitting: 27)))
        let digest = key.textDigest(block)
        let pages = try chunks.enumerated().map { i, c in
            try BeaconCodec.seal(.text(BeaconTextPage(counter: next(), digest: digest, index: UInt8(i),
                                                      count: UInt8(chunks.count), chunk: c)), key: key)
        }
        return (BeaconQuestion(number: number, kind: kind, options: options, textDigest: digest), pages)
    }

    /// Puts `frames` on the air, in turn, replacing what was there.
    func send(_ frames: [[UInt8]]) async throws {
        try await tally.broadcast(BroadcastPayload(companyID: BallotFormat.companyID, frames: frames,
                                                   interval: .milliseconds(20)))
    }
}

/// `clicker-vote` run as a student runs it: stdout a terminal (sentences) or a pipe (a board's
/// script), stdin a pipe the test types into, stderr kept.
final class VoteProcess {
    let process = Process()
    let input = Pipe()
    let errors = Pipe()
    let state: String
    let environment: [String: String]
    private var pty: PseudoTerminal?
    private let out = Pipe()
    private let stop = StopFlag()
    private let lines = LineQueue()
    /// How long `next()` waits for a line: a line that never comes fails the test instead of holding it.
    static let lineTimeout: TimeInterval = 90

    static func executable() throws -> URL {
        let bundle = URL(fileURLWithPath: CommandLine.arguments.first { $0.hasSuffix(".xctest") } ?? "/proc/self/exe")
            .resolvingSymlinksInPath()
        let exe = bundle.deletingLastPathComponent().appendingPathComponent("clicker-vote")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: exe.path), "clicker-vote not built")
        return exe
    }

    init(_ arguments: [String], terminal: Bool) throws {
        state = NSTemporaryDirectory() + "clicker-cli-\(UUID().uuidString)"
        environment = ["XDG_STATE_HOME": state, "HOME": state, "PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": state]
        process.executableURL = try Self.executable()
        process.arguments = arguments
        process.environment = environment
        process.standardInput = input
        process.standardError = errors
        let sink = lines
        if terminal {
            let pty = try PseudoTerminal(width: 80, height: 24)
            self.pty = pty
            process.standardOutput = FileHandle(fileDescriptor: pty.secondary, closeOnDealloc: false)
            let stop = self.stop
            // The terminal's lines, read on a thread of their own (poll, then the non-blocking read).
            Thread.detachNewThread {
                var buffer: [UInt8] = []
                while !stop.stopped {
                    var fd = pollfd(fd: pty.primary, events: Int16(POLLIN), revents: 0)
                    guard poll(&fd, 1, 200) > 0 else { continue }
                    buffer += pty.readAvailable()
                    while let i = buffer.firstIndex(of: 10) {
                        sink.push(String(decoding: buffer[..<i].filter { $0 != 13 }, as: UTF8.self))
                        buffer.removeFirst(i + 1)
                    }
                }
                sink.finish()
            }
        } else {
            process.standardOutput = out
            let handle = out.fileHandleForReading
            Thread.detachNewThread {
                let reader = LineReader(handle)
                while let line = reader.next() { sink.push(line) }
                sink.finish()
            }
        }
    }

    /// This device's voter ID in the poll of `code` (the key is made here, before the process reads it).
    func voterID(_ code: JoinCode, roster: Bool = false) async throws -> UInt32 {
        let key = try await DeviceIdentity.load(in: StateDirectory.standard(environment: environment))
        return BallotSealer(secret: PollSecret(deriving: code), deviceKey: key, mode: roster ? .roster : .anonymous).voterID
    }

    func start() throws { try process.run() }

    /// The next line, or nil when the output ended or no line came within ``lineTimeout``.
    func next() async -> String? {
        let line = await lines.next(timeout: Self.lineTimeout)
        if line == nil, !lines.ended { XCTFail("no line from clicker-vote within \(Int(Self.lineTimeout)) s") }
        return line
    }

    /// The next `n` lines.
    func next(_ n: Int) async -> [String] {
        var lines: [String] = []
        for _ in 0..<n { if let l = await next() { lines.append(l) } }
        return lines
    }

    func type(_ text: String) { input.fileHandleForWriting.write(Data((text + "\n").utf8)) }

    /// Stops the process; what it wrote to stderr.
    func finish() -> String {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        stop.stop()
        return String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    deinit {
        if process.isRunning { process.terminate() }
        stop.stop()
    }
}

/// Lines read by a thread, waited for by a test with a bound.
final class LineQueue: @unchecked Sendable {
    // @unchecked Sendable: every stored property is only touched under `lock`.
    private let lock = NSLock()
    private var lines: [String] = []
    private var finished = false
    private var waiter: (id: Int, resume: CheckedContinuation<String?, Never>)?
    private var waits = 0

    var ended: Bool { lock.withLock { finished && lines.isEmpty } }

    func push(_ line: String) {
        let w: CheckedContinuation<String?, Never>? = lock.withLock {
            guard let w = waiter else { lines.append(line); return nil }
            waiter = nil
            return w.resume
        }
        w?.resume(returning: line)
    }

    func finish() {
        let w: CheckedContinuation<String?, Never>? = lock.withLock {
            finished = true
            defer { waiter = nil }
            return waiter?.resume
        }
        w?.resume(returning: nil)
    }

    func next(timeout: TimeInterval) async -> String? {
        await withCheckedContinuation { (c: CheckedContinuation<String?, Never>) in
            // Either a line (or the end) at once, or the number of this wait, ended by a line or the timer.
            let ready: Result<String?, Never>?, id: Int
            (ready, id) = lock.withLock {
                if !lines.isEmpty { return (.success(lines.removeFirst()), 0) }
                if finished { return (.success(nil), 0) }
                waits += 1
                waiter = (waits, c)
                return (nil, waits)
            }
            if let ready { return c.resume(with: ready) }
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [self] in
                let w: CheckedContinuation<String?, Never>? = lock.withLock {
                    guard let w = waiter, w.id == id else { return nil }
                    waiter = nil
                    return w.resume
                }
                w?.resume(returning: nil)
            }
        }
    }
}

/// Tells a reading thread to end.
final class StopFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    var stopped: Bool { flag.load(ordering: .relaxed) }
    func stop() { flag.store(true, ordering: .relaxed) }
}
