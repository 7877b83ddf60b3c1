import ClickerTally
import ClickerTestSupport
import ClickerTransport
import ClickerWire
import DBus
import DBusTestSupport
import Foundation
import TallyDaemon
import TerminalView
import XCTest

/// The daemon's org.clicker.Tally1 API through a real dbus-daemon (private bus), called by our
/// client and by dbus-send.
final class BusAPITests: XCTestCase {
    let code = try! JoinCode(parsing: "4821-ABCDE-FGHJK")  // test constant, not input

    func report(voter: UInt32, answer: Answer) -> AdvertisementReport {
        let b = Ballot(voteID: code.voteID, question: 1, voterID: voter, sequence: 1, answer: answer)
        return AdvertisementReport(address: DeviceAddress(rawValue: UInt64(voter)), rssi: nil, companyID: 0xFFFF,
                                   data: BallotCodec.sealAdvertisement(b, key: .anonymous(pollSecret(code))), timestamp: .zero)
    }

    func testMethodsSignalAndErrorsOverARealBus() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.publishRule = .perBallot  // every ballot shows at once: this test is about the bus
        let controller = try PollController(options: options, store: nil)
        let server = try await DBusConnection.connect(.address(bus.address))
        defer { server.close() }
        let api = try await TallyBusService(controller: controller, connection: server, exportDirectory: "/tmp")
        let emitter = Task { await api.emitChanges(every: .milliseconds(20)) }
        defer { emitter.cancel() }

        let client = try await RemotePoll.connect(.address(bus.address))
        let listener = try await DBusConnection.connect(.address(bus.address))
        defer { listener.close() }
        let signals = try await listener.signals(matching: DBusMatchRule(interface: TallyBus.interface,
                                                                        member: "TallyChanged"))
        for v in UInt32(1)...3 { await controller.ingest(report(voter: v, answer: .choice(1))) }

        // A TallyChanged signal with the new counts arrives.
        var sawThree = false
        for await s in signals {
            if case .uint32(3)? = s.arguments.dropFirst().first { sawThree = true; break }
        }
        XCTAssertTrue(sawThree)

        let results = try JSONDecoder().decode(PollResults.self, from: Data(try await client.resultsJSON().utf8))
        XCTAssertEqual(results.counts["B"], 3)
        XCTAssertEqual(results.ballots.count, 3)
        let model = try await client.viewModel(status: nil)
        XCTAssertEqual(model.joinCode, code.description, "watch fetches the code with JoinCode")
        XCTAssertEqual(model.voters, 3)
        XCTAssertEqual(model.answers.map(\.count), [0, 3, 0, 0])

        // The h key through `watch`: ShowCounts hides the counts for every consumer, then shows them.
        let hiddenStatus = await client.perform(.toggleCounts, exportDirectory: "")
        XCTAssertEqual(hiddenStatus, "counts hidden while a question is open")
        let hidden = try await client.viewModel(status: nil)
        XCTAssertTrue(hidden.countsHidden)
        XCTAssertEqual(hidden.answers.map(\.count), [0, 0, 0, 0], "no count leaves the daemon while hidden")
        _ = await client.perform(.toggleCounts, exportDirectory: "")
        let shownAgain = try await client.viewModel(status: nil)
        XCTAssertEqual(shownAgain.answers.map(\.count), [0, 3, 0, 0])

        try await client.closeQuestion()
        do {
            try await client.closeQuestion()
            XCTFail("closing a closed question must be an error")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, TallyBus.errorFailed)
            XCTAssertEqual(e.message, "no question is open")
        }
        let next = try await client.nextQuestion()
        XCTAssertEqual(next, 2)
        let isOpen = await controller.isOpen
        XCTAssertTrue(isOpen)

        // Bad arguments from another client are a D-Bus error, not a crash.
        let raw = try await DBusConnection.connect(.address(bus.address))
        defer { raw.close() }
        do {
            _ = try await raw.call(destination: TallyBus.name, path: TallyBus.path, interface: TallyBus.interface,
                                   method: "Results", arguments: [.uint32(1000)])
            XCTFail("question 1000 must be refused")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, TallyBus.errorInvalid)
        }
        do {
            _ = try await raw.call(destination: TallyBus.name, path: TallyBus.path, interface: TallyBus.interface,
                                   method: "Export", arguments: [.string("relative/dir")])
            XCTFail("a relative export directory must be refused")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, TallyBus.errorInvalid)
        }
        do {
            _ = try await raw.call(destination: TallyBus.name, path: TallyBus.path, interface: TallyBus.interface,
                                   method: "Results", arguments: [.string("garbage")])
            XCTFail("a wrong signature must be refused")
        } catch let e as DBusError {
            XCTAssertEqual(e.name, DBusError.invalidArgs)
        }

        // dbus-send, as a shell script would call it.
        let out = try run("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=\(TallyBus.name)",
                                                 TallyBus.path.rawValue, "\(TallyBus.interface).Results", "uint32:1"])
        XCTAssertTrue(out.contains("\\\"voters\\\":3") || out.contains("\"voters\":3"), out)
    }

    /// `NextQuestion` and `OpenQuestion` with a kind, options and a title ask that question; bad
    /// ones (unknown kind, 0 or 9 options, options without a kind, a wrong signature, a question
    /// while one is open) are errors and change nothing. Introspection declares the one signature.
    func testQuestionsWithAKindOverTheBus() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let server = try await DBusConnection.connect(.address(bus.address))
        defer { server.close() }
        _ = try await TallyBusService(controller: controller, connection: server, exportDirectory: "/tmp")
        let client = try await RemotePoll.connect(.address(bus.address))

        let n = try await client.ask(kind: "multi", options: ["Helium", "Iron", "Neon"], title: "Noble gases", next: true)
        XCTAssertEqual(n, 2)
        var spec = await controller.spec
        XCTAssertEqual(spec, QuestionSpec(number: 2, options: 3, kinds: [.multiSelect], title: "Noble gases",
                                          optionTexts: ["Helium", "Iron", "Neon"]))
        try await client.closeQuestion()
        let opened = try await client.ask(kind: "numeric", options: ["-1.5..1.5"], title: "", next: false)
        XCTAssertEqual(opened, 3)
        spec = await controller.spec
        XCTAssertEqual(spec, QuestionSpec(number: 3, options: 1, kinds: [.numeric], numeric: NumericRange(decimals: 1, lowest: -15, highest: 15)))

        let raw = try await DBusConnection.connect(.address(bus.address))
        defer { raw.close() }
        func ask(_ kind: String, _ options: [String]) -> [DBusValue] {
            [.string(kind), .array(.string, options.map { .string($0) }), .string("")]
        }
        let invalid = DBusError.invalidArgs
        let bad: [(String, [DBusValue], String, String)] = [
            ("NextQuestion", ask("multiple", ["4"]), TallyBus.errorInvalid,
             "NextQuestion: 'multiple' is not a question kind: one of single, multi, truefalse, numeric, ranked"),
            ("NextQuestion", ask("single", ["0"]), TallyBus.errorInvalid,
             "NextQuestion: 0 options: a question offers 2 to 8 (A to H)"),
            ("OpenQuestion", ask("single", (1...9).map { "o\($0)" }), TallyBus.errorInvalid,
             "OpenQuestion: 9 options: a question offers 2 to 8 (A to H)"),
            ("NextQuestion", ask("", ["4"]), TallyBus.errorInvalid, "NextQuestion: options or a title need a kind"),
            // Issue 37's 10 MB title would be a 10 MB log line and chart; a megabyte of an option's
            // text likewise. A system bus takes it: dbus-daemon's default max_message_size is 32 MiB
            // (system.conf leaves it at that), this private bus's 100 MB.
            ("NextQuestion", [.string("single"), .array(.string, [.string("4")]), .string(String(repeating: "t", count: 10_000_000))],
             TallyBus.errorInvalid, "NextQuestion: the title is longer than 300 characters"),
            ("NextQuestion", ask("single", ["Paris", String(repeating: "o", count: 1 << 20)]), TallyBus.errorInvalid,
             "NextQuestion: option 2 is longer than 120 characters"),
            ("OpenQuestion", ask("single", ["4"]), TallyBus.errorFailed, "question 3 is already open"),
            ("NextQuestion", [.string("single")], invalid, "expected arguments 'sass', got 's'"),
            ("OpenQuestion", [.uint32(4), .array(.string, []), .string("")], invalid, "expected arguments 'sass', got 'uass'"),
            ("NextQuestion", [], invalid, "expected arguments 'sass', got ''"),
        ]
        for (method, args, name, message) in bad {
            do {
                _ = try await raw.call(destination: TallyBus.name, path: TallyBus.path, interface: TallyBus.interface,
                                       method: method, arguments: args)
                XCTFail("\(method) \(args) must be refused")
            } catch let e as DBusError {
                XCTAssertEqual(e.name, name, message)
                XCTAssertEqual(e.message, message)
            }
        }
        let after = await (controller.question, controller.spec)
        XCTAssertEqual(after.0, 3, "refused calls opened nothing")
        XCTAssertEqual(after.1.kinds, [.numeric])

        // Introspection declares the one signature of each.
        let xml = try run("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply=literal", "--dest=\(TallyBus.name)",
                                                 TallyBus.path.rawValue, "org.freedesktop.DBus.Introspectable.Introspect"])
        for method in ["OpenQuestion", "NextQuestion"] {
            let declared = xml.components(separatedBy: "<method name=\"\(method)\">").dropFirst().first?
                .components(separatedBy: "</method>").first ?? ""
            for arg in ["kind\" type=\"s\"", "options\" type=\"as\"", "title\" type=\"s\""] {
                XCTAssertTrue(declared.contains("name=\"\(arg) direction=\"in\""), "\(method)'s \(arg) in:\n\(xml)")
            }
        }

        // dbus-send, as a shell script asks a true/false question.
        _ = try run("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=\(TallyBus.name)",
                                           TallyBus.path.rawValue, "\(TallyBus.interface).NextQuestion", "string:truefalse",
                                           "array:string:", "string:The Sun is a star"])
        spec = await controller.spec
        XCTAssertEqual(spec, QuestionSpec(number: 4, options: 2, kinds: [.trueFalse], title: "The Sun is a star"))
    }

    /// `Status` and `Results` replies never carry the join secret; `JoinCode` (instructors only, by
    /// the policy) is the one that does, for `watch`. `NewPoll` starts a new poll with a new code.
    /// TallyChanged follows the poll's change notices: with a throttle interval of an hour, the
    /// first change after the start is still signalled at once (a timer-driven emitter would sleep
    /// the hour before it looked again).
    func testTallyChangedIsSentOnChangeNotOnATimer() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let rig = try await TallyChangedRig(bus: bus, code: code)
        defer { rig.close() }
        let (controller, api, signals) = (rig.controller, rig.api, rig.signals)
        let emitter = Task { await api.emitChanges(every: .seconds(3600)) }
        defer { emitter.cancel() }

        let vote = report(voter: 7, answer: .choice(2))
        let watching = Task { () -> [UInt32] in
            var voters: [UInt32] = []
            for await s in signals {
                guard case .uint32(let v)? = s.arguments.dropFirst().first else { continue }
                voters.append(v)
                // The first signal (the state at start) says the emitter is up: then one vote.
                if voters.count == 1 { await controller.ingest(vote) }
                if v == 1 { break }
            }
            return voters
        }
        // A deadline for a broken emitter, so the test fails instead of hanging.
        let deadline = Task { try await Task.sleep(for: .seconds(20)); watching.cancel() }
        defer { deadline.cancel() }
        let voters = await watching.value
        XCTAssertEqual(voters, [0, 1], "TallyChanged for the vote did not come at once")
    }

    /// While votes keep coming, `TallyChanged` comes at most 4 times a second (the emitter's default
    /// interval, 250 ms), and the last counts still arrive once the burst ends. On an injected clock:
    /// 200 votes, one every 10 ms of its time.
    func testTallyChangedComesAtMostFourTimesASecondWhileVotesKeepComing() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let rig = try await TallyChangedRig(bus: bus, code: code)
        defer { rig.close() }
        let (controller, api, signals) = (rig.controller, rig.api, rig.signals)
        let clock = TestClock()
        let emitter = Task { await api.emitChanges(clock: clock) }
        defer { emitter.cancel() }

        let votes = 200
        let ballots = (1...votes).map { report(voter: UInt32($0), answer: .choice(1)) }
        let watching = Task { () -> [UInt32] in
            var voters: [UInt32] = []
            var burst: Task<Void, Never>?
            for await s in signals {
                guard case .uint32(let v)? = s.arguments.dropFirst().first else { continue }
                voters.append(v)
                // The first signal (the state at start) says the emitter is up: then the burst.
                if voters.count == 1 {
                    burst = Task {
                        for ballot in ballots {
                            await controller.ingest(ballot)
                            for _ in 0..<20 { await Task.yield() }
                            clock.advance(by: .milliseconds(10))
                        }
                        // The burst is over: the trailing wake-up, 250 ms after the last vote.
                        for _ in 0..<20 { await Task.yield() }
                        clock.advance(by: .milliseconds(300))
                    }
                }
                if v == UInt32(votes) { break }
            }
            await burst?.value
            return voters
        }
        let deadline = Task { try await Task.sleep(for: .seconds(60)); watching.cancel() }
        defer { deadline.cancel() }
        let voters = await watching.value
        XCTAssertEqual(voters.last, UInt32(votes), "the last counts arrived after the burst")
        // 2 s of votes: at most one signal per 250 ms of them, one after the burst, and the one at start.
        XCTAssertLessThanOrEqual(voters.count, 1 + 2_000 / 250 + 1 + 1, "TallyChanged came more than 4 times a second: \(voters)")
        XCTAssertGreaterThanOrEqual(voters.count, 4, "TallyChanged waited for the burst to end: \(voters)")
    }

    func testOnlyJoinCodeRepliesWithTheSecretAndNewPollReplacesThePoll() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let controller = try PollController(options: PollOptions(joinCode: code, confirmByGATT: false), store: nil)
        let server = try await DBusConnection.connect(.address(bus.address))
        defer { server.close() }
        _ = try await TallyBusService(controller: controller, connection: server, exportDirectory: "/tmp")
        let client = try await RemotePoll.connect(.address(bus.address))
        for v in UInt32(1)...3 { await controller.ingest(report(voter: v, answer: .choice(2))) }

        let status = try await client.statusJSON(), results = try await client.resultsJSON()
        for text in [status, results] {
            for form in ["ABCDE", "abcde", "FGHJK", "fghjk", "ABCDEFGHJK", "abcdefghjk"] {
                XCTAssertFalse(text.contains(form), "\(form) in \(text)")
            }
        }
        XCTAssertTrue(status.contains("4821"), status)
        let shown = try await client.joinCode()
        XCTAssertEqual(shown, code.description)
        let watched = try await client.viewModel(status: nil)
        XCTAssertEqual(watched.joinCode, code.description, "watch shows the code on the instructor's screen")

        let voteID = try await client.newPoll()
        let newCode = try JoinCode(parsing: try await client.joinCode())
        XCTAssertEqual(newCode.voteID, voteID)
        XCTAssertNotEqual(newCode, code)
        let fresh = try JSONDecoder().decode(PollResults.self, from: Data(try await client.resultsJSON().utf8))
        XCTAssertEqual(fresh.voters, 0)
        XCTAssertEqual(fresh.voteID, Int(voteID))
    }

    func testSecondDaemonCannotTakeTheName() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let c1 = try PollController(options: PollOptions(joinCode: code), store: nil)
        let s1 = try await DBusConnection.connect(.address(bus.address))
        defer { s1.close() }
        _ = try await TallyBusService(controller: c1, connection: s1, exportDirectory: "/tmp")
        let s2 = try await DBusConnection.connect(.address(bus.address))
        defer { s2.close() }
        do {
            _ = try await TallyBusService(controller: c1, connection: s2, exportDirectory: "/tmp")
            XCTFail("the name is taken")
        } catch let e as DBusError {
            XCTAssertTrue(e.message.contains("already owned"), e.message)
        }
    }

    func testClientSaysHowToStartTheDaemonWhenNoneRuns() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        do {
            _ = try await RemotePoll.connect(.address(bus.address))
            XCTFail("no daemon runs")
        } catch let e as RemotePollError {
            XCTAssertEqual(e, .noDaemon(TallyBus.name))
            XCTAssertTrue(e.description.contains("systemctl start clicker-tally"))
        }
    }

    func run(_ path: String, _ args: [String]) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestEnvironmentError("\(path) missing: apt-get install dbus-bin")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        try p.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

/// A poll that shows every ballot at once, served on a private bus, and a listener's `TallyChanged` signals.
private struct TallyChangedRig {
    let controller: PollController
    let server: DBusConnection
    let api: TallyBusService
    let listener: DBusConnection
    let signals: AsyncStream<DBusSignal>

    init(bus: PrivateBus, code: JoinCode) async throws {
        var options = PollOptions(joinCode: code, confirmByGATT: false)
        options.publishRule = .perBallot
        controller = try PollController(options: options, store: nil)
        server = try await DBusConnection.connect(.address(bus.address))
        api = try await TallyBusService(controller: controller, connection: server, exportDirectory: "/tmp")
        listener = try await DBusConnection.connect(.address(bus.address))
        signals = try await listener.signals(matching: DBusMatchRule(interface: TallyBus.interface, member: "TallyChanged"))
    }

    func close() {
        listener.close()
        server.close()
    }
}
