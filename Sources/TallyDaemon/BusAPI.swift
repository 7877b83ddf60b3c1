import ClickerQuestions
import ClickerTally
import DBus
import Foundation
import Logging
import TerminalView

/// Names of the daemon's D-Bus API (docs/GUIDE.md, "The D-Bus API").
public enum TallyBus {
    /// Well-known name the daemon owns on the system bus.
    public static let name = "org.clicker.Tally1"
    public static let path: DBusObjectPath = "/org/clicker/Tally1"
    public static let interface = "org.clicker.Tally1"
    /// Error names the API replies with.
    public static let errorFailed = "org.clicker.Tally1.Error.Failed"
    public static let errorInvalid = "org.clicker.Tally1.Error.InvalidArgs"

    static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return e
    }()
}

/// Serves a `PollController` on D-Bus as `org.clicker.Tally1`:
///
/// | member | signature | does |
/// |---|---|---|
/// | `OpenQuestion(s kind, as options, s title)` | → `u` | kind "": reopens the current question; else asks this question (next number) while none is open |
/// | `CloseQuestion()` | → | closes it |
/// | `NextQuestion(s kind, as options, s title)` | → `u` | closes it and opens the next: kind "": the set's next (or the same kind again); else this question |
/// | `NewPoll()` | → `q` | ends the poll and starts a new one with a fresh join code; returns its vote ID |
/// | `Status()` | → `s` | the live view's model as JSON (aggregates; the join code as vote ID only) |
/// | `JoinCode()` | → `s` | the join code, for `watch` and `status` to show on the instructor's screen |
/// | `ShowCounts(b show)` | → | shows or hides the live counts of open questions |
/// | `Results(u question)` | → `s` | results JSON with per-voter rows (0 = current question) |
/// | `Export(s directory)` | → `as` | writes CSV and JSON; "" = the daemon's own export directory |
///
/// `JoinCode` is the only reply that carries the join secret: no other reply, signal or log line does.
/// | signal `TallyChanged(u question, u voters, a{su} counts)` | | at most 4 a second, on change |
///
/// `Status` and `TallyChanged` carry the live counts (`PollController.liveCounts`): batched while a
/// question is open, empty while hidden, exact once it is closed.
///
/// Who may call what is the D-Bus policy's job (`dbus-policy/`), not this code's.
public final class TallyBusService: Sendable {
    public let object: DBusExportedObject
    private let controller: PollController
    private let connection: DBusConnection

    /// Exports the API and takes the well-known name. Throws when another daemon already owns it.
    public init(controller: PollController, connection: DBusConnection, exportDirectory: String,
                name: String = TallyBus.name) async throws {
        self.controller = controller
        self.connection = connection
        object = try connection.export(TallyBus.path, interfaces: [Self.interface(controller, exportDirectory)])
        let reply = try await connection.requestName(name)
        guard reply == .primaryOwner || reply == .alreadyOwner else {
            object.unexport()
            throw DBusError(name: TallyBus.errorFailed,
                            message: "\(name) is already owned by another clicker-tally daemon")
        }
    }

    static func interface(_ c: PollController, _ exportDirectory: String) -> DBusInterface {
        @Sendable func run(_ body: @Sendable () async throws -> [DBusValue]) async throws -> [DBusValue] {
            do { return try await body() } catch let e as PollError {
                throw DBusError(name: TallyBus.errorFailed, message: e.description)
            }
        }
        return DBusInterface(TallyBus.interface, methods: [
            DBusMethod("OpenQuestion", in: askArguments, out: [DBusArgument("question", .uint32)]) { call in
                let adHoc = try TallyBusService.adHocQuestion(call)
                return try await run {
                    if let adHoc { try await c.openQuestion(adHoc) } else { try await c.openQuestion() }
                    return [.uint32(UInt32(await c.question))]
                }
            },
            DBusMethod("CloseQuestion") { _ in try await run { try await c.closeQuestion(); return [] } },
            DBusMethod("NextQuestion", in: askArguments, out: [DBusArgument("question", .uint32)]) { call in
                let adHoc = try TallyBusService.adHocQuestion(call)
                return try await run {
                    try await c.nextQuestion(adHoc)
                    return [.uint32(UInt32(await c.question))]
                }
            },
            DBusMethod("NewPoll", out: [DBusArgument("vote_id", .uint16)]) { _ in
                try await run { [.uint16(try await c.newPoll())] }
            },
            DBusMethod("Status", out: [DBusArgument("json", .string)]) { _ in
                let model = await c.viewModel(status: nil, showJoinCode: false)
                return [.string(String(decoding: try TallyBus.encoder.encode(model), as: UTF8.self))]
            },
            DBusMethod("ShowCounts", in: [DBusArgument("show", .boolean)]) { call in
                guard case .boolean(let show)? = call.arguments.first else {
                    throw DBusError(name: TallyBus.errorInvalid, message: "show must be a boolean")
                }
                await c.setCountsShown(show)
                return []
            },
            DBusMethod("JoinCode", out: [DBusArgument("code", .string)]) { _ in
                [.string(await c.joinCode.description)]
            },
            DBusMethod("Results", in: [DBusArgument("question", .uint32)], out: [DBusArgument("json", .string)]) { call in
                guard case .uint32(let q)? = call.arguments.first, q <= 255 else {
                    throw DBusError(name: TallyBus.errorInvalid, message: "question must be 0 (current) to 255")
                }
                let r = await c.results(question: q == 0 ? nil : UInt8(q))
                return [.string(String(decoding: try TallyBus.encoder.encode(r), as: UTF8.self))]
            },
            DBusMethod("Export", in: [DBusArgument("directory", .string)], out: [DBusArgument("files", "as")]) { call in
                guard case .string(let d)? = call.arguments.first, d.isEmpty || d.hasPrefix("/") else {
                    throw DBusError(name: TallyBus.errorInvalid, message: "directory must be absolute, or empty")
                }
                let files = try await run { try await [.array(.string, c.export(to: d.isEmpty ? exportDirectory : d).map { .string($0) })] }
                return files
            },
        ], signals: [
            DBusSignalDescription("TallyChanged", [DBusArgument("question", .uint32), DBusArgument("voters", .uint32),
                                                   DBusArgument("counts", "a{su}")]),
        ])
    }

    /// `OpenQuestion` and `NextQuestion` take a question: its kind's name ("" for none), its option
    /// texts (or their number, or a numeric range) and its title ("" for none).
    static let askArguments = [DBusArgument("kind", .string), DBusArgument("options", "as"), DBusArgument("title", .string)]

    /// The question of an `OpenQuestion` or `NextQuestion` call, read as `AdHocQuestion` reads the
    /// command line's: nil for kind "" with no options and no title. A question that cannot be asked
    /// is an `InvalidArgs` error (the signature is checked before the call gets here).
    static func adHocQuestion(_ call: DBusMethodCall) throws -> QuestionSpec? {
        let method = call.message.member ?? "the call"
        guard call.arguments.count == 3, case .string(let kind) = call.arguments[0],
              case .array(_, let options) = call.arguments[1], case .string(let title) = call.arguments[2] else {
            throw DBusError(name: TallyBus.errorInvalid, message: "\(method) takes (s kind, as options, s title)")
        }
        let texts = options.compactMap { o -> String? in
            if case .string(let t) = o { return t }
            return nil
        }
        if kind.isEmpty {
            guard texts.isEmpty, title.isEmpty else {
                throw DBusError(name: TallyBus.errorInvalid, message: "\(method): options or a title need a kind")
            }
            return nil
        }
        do {
            return try AdHocQuestion.spec(number: 1, kind: kind, options: texts, title: title.isEmpty ? nil : title)
        } catch {
            throw DBusError(name: TallyBus.errorInvalid, message: "\(method): \(error)")
        }
    }

    /// Emits `TallyChanged` when the live counts changed, at most every `interval`, until cancelled.
    /// Woken by the poll's change notices (throttled), and once more when the count publisher's
    /// next epoch may have come due after the last change; never by a timer of its own.
    public func emitChanges<C: Clock>(every interval: Duration = .milliseconds(250), clock: C = ContinuousClock()) async
    where C.Duration == Duration {
        let settle = await controller.options.publishRule.minInterval
        // Subscribed before the first reading, so no change between the two is missed.
        let updates = controller.changeFeed.updates(every: interval, settle: settle > .zero ? settle : nil, clock: clock)
        var last: (question: UInt8, counts: LiveCounts)?
        func emitIfChanged() async {
            let question = await controller.question
            var live = await controller.liveCounts()
            live.notYetShown = 0   // the signal carries the counts; ballots still pending are not a change
            guard last?.question != question || last?.counts != live else { return }
            last = (question, live)
            let counts = live.counts.sorted { $0.key < $1.key }.map {
                DBusDictEntry(.string($0.key), .uint32(UInt32(max(0, $0.value))))
            }
            try? connection.emitSignal(path: TallyBus.path, interface: TallyBus.interface, name: "TallyChanged",
                                       arguments: [.uint32(UInt32(question)), .uint32(UInt32(live.voters)),
                                                   .dictionary(key: .string, value: .uint32, counts)])
        }
        await emitIfChanged()
        for await _ in updates {
            if Task.isCancelled { break }
            await emitIfChanged()
        }
    }
}

/// A daemon's poll seen through D-Bus: the client side of `org.clicker.Tally1`, used by
/// `clicker-tally watch` and the script subcommands.
public struct RemotePoll: PollControl {
    public let connection: DBusConnection
    public let name: String

    /// Connects and checks that a daemon is there, with an error that says how to start one.
    public static func connect(_ target: DBusBusTarget, name: String = TallyBus.name) async throws -> RemotePoll {
        let connection: DBusConnection
        do { connection = try await DBusConnection.connect(target) } catch {
            throw RemotePollError.noBus("\(error)")
        }
        guard (try? await connection.nameOwner(name)) ?? nil != nil else {
            connection.close()
            throw RemotePollError.noDaemon(name)
        }
        return RemotePoll(connection: connection, name: name)
    }

    func call(_ method: String, _ args: [DBusValue] = []) async throws -> DBusMessage {
        do {
            return try await connection.call(destination: name, path: TallyBus.path, interface: TallyBus.interface,
                                             method: method, arguments: args, timeout: .seconds(10))
        } catch let e as DBusError where e.name == DBusError.serviceUnknown || e.name == DBusError.nameHasNoOwner {
            throw RemotePollError.noDaemon(name)
        }
    }

    /// The arguments of `OpenQuestion` and `NextQuestion` that ask no question of their own.
    private static let noQuestion: [DBusValue] = [.string(""), .array(.string, []), .string("")]

    public func openQuestion() async throws { _ = try await call("OpenQuestion", Self.noQuestion) }
    public func closeQuestion() async throws { _ = try await call("CloseQuestion") }
    public func nextQuestion() async throws -> Int { Int(try await call("NextQuestion", Self.noQuestion).decode(UInt32.self)) }
    /// Asks a question of `kind` (single, multi, truefalse, numeric, ranked) with `options` (texts,
    /// their count, or a numeric question's range) and `title` ("" for none): with `next`, closes the
    /// current question first (`NextQuestion`); without, only while none is open (`OpenQuestion`).
    /// Returns the question's number.
    public func ask(kind: String, options: [String], title: String, next: Bool) async throws -> Int {
        let args: [DBusValue] = [.string(kind), .array(.string, options.map { .string($0) }), .string(title)]
        return Int(try await call(next ? "NextQuestion" : "OpenQuestion", args).decode(UInt32.self))
    }
    /// Starts a new poll; returns its vote ID.
    public func newPoll() async throws -> UInt16 { try await call("NewPoll").decode(UInt16.self) }
    /// The live view's model as JSON (the join code as vote ID only).
    public func statusJSON() async throws -> String { try await call("Status").decode(String.self) }
    /// The join code, to show on the instructor's screen.
    public func joinCode() async throws -> String { try await call("JoinCode").decode(String.self) }
    /// Results JSON of `question` (nil: the current one).
    public func resultsJSON(question: Int? = nil) async throws -> String {
        try await call("Results", [.uint32(UInt32(question ?? 0))]).decode(String.self)
    }
    public func export(to directory: String) async throws -> [String] {
        try await call("Export", [.string(directory)]).decode([String].self)
    }

    public func viewModel(status: String?) async throws -> TallyViewModel {
        var m = try JSONDecoder().decode(TallyViewModel.self, from: Data(try await statusJSON().utf8))
        // `watch` is the instructor's screen: it shows the code.
        m.joinCode = try await joinCode()
        if let status { m.status = status }
        return m
    }

    /// Yields on each `TallyChanged` signal of the daemon (coalesced).
    public func changes() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let connection = self.connection
        let task = Task {
            let rule = DBusMatchRule(interface: TallyBus.interface, member: "TallyChanged", path: TallyBus.path)
            if let signals = try? await connection.signals(matching: rule) {
                for await _ in signals { continuation.yield() }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    public func perform(_ action: ViewAction, exportDirectory: String) async -> String? {
        do {
            switch action {
            case .openQuestion: try await openQuestion(); return "question opened"
            case .closeQuestion: try await closeQuestion(); return "question closed"
            case .nextQuestion: return "question \(try await nextQuestion()) open"
            case .export: return "exported " + (try await export(to: "")).joined(separator: ", ")
            case .toggleCounts:
                let hidden = try await viewModel(status: nil).countsHidden
                _ = try await call("ShowCounts", [.boolean(hidden)])
                return hidden ? "counts shown" : "counts hidden while a question is open"
            case .quit: return nil
            }
        } catch {
            return "\(error)"
        }
    }
}

public enum RemotePollError: Error, CustomStringConvertible, Equatable {
    case noBus(String)
    case noDaemon(String)

    public var description: String {
        switch self {
        case .noBus(let why): "cannot reach the D-Bus system bus (\(why)); is dbus running? (sudo systemctl start dbus)"
        case .noDaemon(let name):
            "no clicker-tally daemon owns \(name): start it with `sudo systemctl start clicker-tally`, or run `clicker-tally daemon`"
        }
    }
}
