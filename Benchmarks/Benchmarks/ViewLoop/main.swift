// ViewLoop: CPU of the live view itself, at 300 voters and ~100 ballots/s.
//
// The real view loop (`LiveView.step`, the pass that `LiveView.run` repeats every 50 ms) runs on a
// real pseudo-terminal against a real `PollController`, in real time, for `--seconds`. Between passes
// the benchmark feeds the controller its share of sealed ballots (300 voters: each votes once, then
// they keep changing answers) and drains the terminal, as a terminal emulator would. Both are outside
// the measured windows: only the passes are measured, with the process CPU clock
// (CLOCK_PROCESS_CPUTIME_ID), so the figure is the view's CPU whatever else the machine runs.
// A second figure charges the view with everything the process spent that was not feeding or
// draining (the 50 ms timer wake-ups, the executor), an upper bound.
//
// Requirement (issue "instructor's daemon"): at most 2 % of a core.
// Run: swift run --package-path Benchmarks -c release ViewLoop [--seconds 30] [--rate 100] [--voters 300]
//          [--size 80x24]
import ClickerTransport
import ClickerWire
import Foundation
import TallyDaemon
import TerminalTestSupport
import TerminalView

#if canImport(Glibc)
import Glibc
#endif

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ s: String) { description = s }
}

struct Options {
    var seconds = 30.0, rate = 100, voters = 300, width: UInt16 = 80, height: UInt16 = 24

    init(_ arguments: [String]) {
        var args = arguments.dropFirst().makeIterator()
        while let a = args.next() {
            let v = args.next() ?? ""
            switch a {
            case "--seconds": seconds = Double(v) ?? seconds
            case "--rate": rate = Int(v) ?? rate
            case "--voters": voters = Int(v) ?? voters
            case "--size":
                let p = v.split(separator: "x").compactMap { UInt16($0) }
                if p.count == 2 { (width, height) = (p[0], p[1]) }
            default:
                FileHandle.standardError.write(Data("unknown option \(a)\n".utf8))
                exit(2)
            }
        }
    }
}

func processCPU() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// The room: voter i has its own device key; each first votes, then changes its answer.
struct Room {
    let code: JoinCode
    var sealers: [BallotSealer] = []
    var sequence: [UInt16]
    var next = 0
    var rng = SystemRandomNumberGenerator()

    init(voters: Int) throws {
        code = try JoinCode(voteID: 4821, secret: 0x1_2345_6789_ABCD)
        let secret = PollSecret(deriving: code)
        for i in 0..<voters {
            var bytes = [UInt8](repeating: 0, count: 32)
            for j in 0..<32 { bytes[j] = UInt8(truncatingIfNeeded: i &* 131 &+ j &* 7 &+ 1) ^ UInt8(truncatingIfNeeded: i >> 8) }
            guard let key = DeviceKey(bytes: bytes) else { throw Failure("device key \(i)") }
            sealers.append(BallotSealer(secret: secret, deviceKey: key))
        }
        sequence = Array(repeating: 0, count: voters)
    }

    /// The next ballot: voters in turn, each with a fresh sequence number and a random answer.
    mutating func ballot() -> AdvertisementReport {
        let i = next % sealers.count
        next += 1
        sequence[i] &+= 1
        let answer = Answer.choice(UInt8.random(in: 0..<4, using: &rng))
        let data = sealers[i].advertisement(question: 1, sequence: sequence[i], answer: answer)
        let address = DeviceAddress(0xC0, 0, 0, 0, UInt8(i >> 8), UInt8(i & 0xFF))
        return AdvertisementReport(address: address, rssi: -60, companyID: BallotFormat.companyID, data: data,
                                   timestamp: .now())
    }
}

func main() async throws {
    let o = Options(CommandLine.arguments)
    let (rate, voters, width, height) = (o.rate, o.voters, o.width, o.height)
    var room = try Room(voters: voters)
    var pollOptions = PollOptions(joinCode: room.code, confirmByGATT: false)
    pollOptions.publishRule = .perBallot  // the worst case: the bars move with every ballot
    let controller = try PollController(options: pollOptions, store: nil)
    let pty = try PseudoTerminal(width: width, height: height)
    let terminal = try TerminalSession(input: pty.secondary, output: pty.secondary, restoreOnSignals: false)
    let exports = FileManager.default.temporaryDirectory.path
    var view = LiveView(environment: [:])

    func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
    let pass = seconds(LiveView.passInterval)
    let passes = Int(o.seconds / pass)
    var carry = 0.0
    var inPasses = 0.0, feeding = 0.0, draining = 0.0
    var frames = 0, written = 0, read = 0
    let clock = ContinuousClock()
    let t0 = clock.now
    let cpu0 = processCPU()
    for i in 0..<passes {
        // Feed this pass's share of the ballots of a second.
        var c = processCPU()
        carry += Double(rate) * pass
        while carry >= 1 {
            await controller.ingest(room.ballot())
            carry -= 1
        }
        var d = processCPU()
        feeding += d - c

        c = d
        let result = await view.step(controller, terminal: terminal, exportDirectory: exports)
        d = processCPU()
        inPasses += d - c
        if case .shown(let bytes) = result, bytes > 0 { frames += 1; written += bytes }

        c = d
        read += pty.readAvailable().count
        draining += processCPU() - c

        try await Task.sleep(until: t0 + LiveView.passInterval * (i + 1), clock: clock)
    }
    let wall = seconds(clock.now - t0)
    let total = processCPU() - cpu0
    let results = await controller.results(ballots: false)

    let pct = { (cpu: Double) in String(format: "%.3f %%", cpu / wall * 100) }
    print("live view at \(voters) voters, \(rate) ballots/s, \(width)x\(height) pseudo-terminal, \(String(format: "%.1f", wall)) s, \(passes) passes")
    print("  ballots fed \(room.next); voters counted \(results.voters), changes \(results.changes)")
    print("  frames drawn \(frames), bytes written \(written) (read back \(read))")
    print("  view CPU in its passes: \(String(format: "%.1f", inPasses * 1000)) ms = \(pct(inPasses)) of a core" +
          " (\(String(format: "%.0f", inPasses / Double(passes) * 1e6)) µs per pass)")
    print("  everything but feeding and draining (adds timer wake-ups, executor): \(pct(total - feeding - draining)) of a core")
    print("  (feeding the controller: \(pct(feeding)); draining the terminal: \(pct(draining)))")
    // The run must have been real: every voter counted, frames written and read back (the terminal
    // also got the session's enter sequence, written before the first pass).
    guard results.voters == min(voters, room.next), frames > 0, read >= written else {
        throw Failure("run not valid: voters \(results.voters), frames \(frames), written \(written), read \(read)")
    }
    withExtendedLifetime((terminal, pty)) {}
}

do { try await main() } catch {
    FileHandle.standardError.write(Data("ViewLoop: \(error)\n".utf8))
    exit(1)
}
