import ClickerTally
import ClickerTestSupport
import ClickerWire
import Foundation
import ProjectorPage
import ProjectorTestSupport
import ProjectorWeb
import TallyDaemon
import XCTest

/// The projector's server on a live loopback port: every endpoint, bad methods, paths and tokens,
/// the hidden state and a ballot reaching an open event stream.
final class ProjectorServerTests: XCTestCase {
    func start(_ controller: PollController, token: String? = nil) async throws -> ProjectorServer {
        let server = try await ProjectorServer.start(controller: controller, address: ProjectorAddress(port: 0), token: token)
        addTeardownBlock { await server.stop() }
        return server
    }

    func testThePageIsServedWholeWithItsPolicy() async throws {
        let server = try await start(try perBallotPoll())
        let r = try await HTTPTestClient.fetch(port: server.address.port, path: "/")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("content-type"), "text/html; charset=utf-8")
        XCTAssertEqual(r.body, ProjectorPage.bytes)
        let csp = try XCTUnwrap(r.header("content-security-policy"))
        XCTAssertTrue(csp.hasPrefix("default-src 'none'"), csp)
        XCTAssertTrue(csp.contains("connect-src 'self'"), csp)
        XCTAssertEqual(r.header("cache-control"), "no-store")
        XCTAssertEqual(r.header("referrer-policy"), "no-referrer")
    }

    /// A ballot committed while a browser listens reaches it as a `snapshot` event within 200 ms, and
    /// `/results.json` then gives the same snapshot.
    func testABallotReachesTheEventStreamWithin200msAndTheJSONAgrees() async throws {
        let controller = try perBallotPoll()
        let server = try await start(controller)
        var events = try await EventReader(port: server.address.port)
        XCTAssertEqual(events.stream.status, 200)
        XCTAssertEqual(events.stream.header("content-type"), "text/event-stream")
        let (first, _) = try await events.snapshot { _ in true }
        XCTAssertEqual(first.voters, 0)
        XCTAssertEqual(first.results?.bars.map(\.count), [0, 0, 0, 0])

        let ballot = anonymousReport(voter: 1, answer: .choice(2))  // sealed before the clock starts
        let clock = ContinuousClock()
        let sent = clock.now
        await controller.ingest(ballot)
        let (after, data) = try await events.snapshot { $0.voters == 1 }
        let latency = sent.duration(to: clock.now)
        print("ballot to event: \(latency)")
        XCTAssertLessThan(latency, .milliseconds(200))
        XCTAssertEqual(after.results?.bars.map(\.option), ["A", "B", "C", "D"])
        XCTAssertEqual(after.results?.bars.map(\.count), [0, 0, 1, 0])
        XCTAssertEqual(after.state, .open)
        XCTAssertEqual(after.joinCode, testCode.description)
        XCTAssertEqual(after.question.number, 1)

        let json = try await HTTPTestClient.fetch(port: server.address.port, path: "/results.json")
        XCTAssertEqual(json.status, 200)
        XCTAssertEqual(json.header("content-type"), "application/json")
        XCTAssertEqual(json.text, data, "the JSON endpoint gives what the page was sent")
        await events.stream.close()
    }

    /// The counts shown match the tally's exact counts once the question closes.
    func testClosedQuestionShowsTheTallysCounts() async throws {
        let controller = try perBallotPoll()
        let server = try await start(controller)
        var events = try await EventReader(port: server.address.port)
        let answers: [Answer] = [.choice(0), .choice(1), .choice(1), .choice(3), .choice(1)]
        for (i, a) in answers.enumerated() { await controller.ingest(anonymousReport(voter: UInt32(i + 1), answer: a)) }
        try await controller.closeQuestion()
        let (closed, _) = try await events.snapshot { $0.state == .closed }
        let exact = await controller.results()
        XCTAssertEqual(closed.voters, exact.voters)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: (closed.results?.bars ?? []).map { ($0.option, $0.count) }), exact.counts)
        XCTAssertEqual(exact.counts, ["A": 1, "B": 3, "C": 0, "D": 1])
        await events.stream.close()
    }

    /// The next question, asked ad hoc as a multi-select with a title and option texts: the page is
    /// sent its number, title, texts and kind, and one bar per option counting the voters who chose it.
    func testANewQuestionBringsItsTitleOptionTextsAndKind() async throws {
        let controller = try perBallotPoll()
        let server = try await start(controller)
        var events = try await EventReader(port: server.address.port)
        try await controller.nextQuestion(QuestionSpec(number: 2, options: 3, kinds: [.multiSelect],
                                                       title: "Which are <i>prime</i>?", optionTexts: ["2", "4", "5"]))
        let (asked, _) = try await events.snapshot { $0.question.number == 2 }
        XCTAssertEqual(asked.question.kind, .multiSelect)
        XCTAssertEqual(asked.question.title, "Which are <i>prime</i>?")
        XCTAssertEqual(asked.question.options.map(\.text), ["2", "4", "5"])
        XCTAssertEqual(asked.state, .open)
        XCTAssertEqual(asked.results?.bars.map(\.count), [0, 0, 0])
        let ballots: [Answer] = [.multiSelect(0b101), .multiSelect(0b101), .multiSelect(0b001), .multiSelect(0b111)]
        for (i, a) in ballots.enumerated() {
            await controller.ingest(anonymousReport(voter: UInt32(i + 1), answer: a, question: 2))
        }
        let (counted, _) = try await events.snapshot { $0.voters == 4 }
        XCTAssertEqual(counted.results?.bars.map(\.option), ["A", "B", "C"])
        XCTAssertEqual(counted.results?.bars.map(\.count), [4, 1, 3])
        await events.stream.close()
    }

    /// Hidden counts (the `h` key, D-Bus `ShowCounts`): neither the event nor the JSON carries a count;
    /// shown again, they come back.
    func testHiddenCountsAreNotSent() async throws {
        let controller = try perBallotPoll()
        let server = try await start(controller)
        var events = try await EventReader(port: server.address.port)
        for i in 1...3 { await controller.ingest(anonymousReport(voter: UInt32(i), answer: .choice(1))) }
        _ = try await events.snapshot { $0.results?.bars.map(\.count) == [0, 3, 0, 0] }
        await controller.setCountsShown(false)
        let (hidden, data) = try await events.snapshot { $0.hidden }
        XCTAssertNil(hidden.results)
        XCTAssertFalse(data.contains("\"count\""), data)
        XCTAssertFalse(data.contains("\"results\""), data)
        let json = try await HTTPTestClient.fetch(port: server.address.port, path: "/results.json")
        XCTAssertEqual(json.text, data)

        await controller.setCountsShown(true)
        let (shown, _) = try await events.snapshot { !$0.hidden }
        XCTAssertEqual(shown.results?.bars.map(\.count), [0, 3, 0, 0])
        await events.stream.close()
    }

    /// The page's "download SVG" chart carries the counts the page shows, drawn as the export draws
    /// them, and nothing while they are hidden.
    func testTheChartCarriesThePagesCountsAndNothingWhileHidden() async throws {
        let controller = try perBallotPoll()
        let server = try await start(controller)
        var events = try await EventReader(port: server.address.port)
        for i in 1...3 { await controller.ingest(anonymousReport(voter: UInt32(i), answer: .choice(1))) }
        await controller.ingest(anonymousReport(voter: 4, answer: .choice(3)))
        _ = try await events.snapshot { $0.results?.bars.map(\.count) == [0, 3, 0, 1] }
        let chart = try await HTTPTestClient.fetch(port: server.address.port, path: "/chart.svg")
        XCTAssertEqual(chart.status, 200)
        XCTAssertEqual(chart.header("content-type"), "image/svg+xml")
        XCTAssertEqual(try ParsedSVG(chart.text).bars, ["A": 0, "B": 3, "C": 0, "D": 1])

        await controller.setCountsShown(false)
        _ = try await events.snapshot { $0.hidden }
        let hidden = try await HTTPTestClient.fetch(port: server.address.port, path: "/chart.svg")
        XCTAssertEqual(hidden.status, 404)
        XCTAssertFalse(hidden.text.contains("data-count"), hidden.text)
        await events.stream.close()
    }

    /// The page is read-only: every method but GET is refused with 405 on every path, and the poll
    /// is unchanged.
    func testOnlyGETIsAnswered() async throws {
        let controller = try perBallotPoll()
        let server = try await start(controller)
        let before = await (controller.question, controller.isOpen, controller.countsShown)
        for method in ["POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"] {
            for path in ["/", "/results.json", "/chart.svg", "/events", "/open", "/nope"] {
                let r = try await HTTPTestClient.fetch(port: server.address.port, path: path, method: method,
                                                       headers: [("Content-Length", "0")])
                XCTAssertEqual(r.status, 405, "\(method) \(path)")
                if method != "HEAD" { XCTAssertEqual(r.header("allow"), "GET", "\(method) \(path)") }
            }
        }
        let after = await (controller.question, controller.isOpen, controller.countsShown)
        XCTAssertTrue(before == after)
    }

    func testBadPathsAre404AndTheServerKeepsServing() async throws {
        let server = try await start(try perBallotPoll())
        let port = server.address.port
        let long = "/" + String(repeating: "a", count: 6000)
        for path in ["/nope", "/results.json/x", "/events/", "/index.html", "/../etc/passwd", "/%00", "/%ff%fe", long,
                     "/results.json;x", "//", "/?"] {
            let r = try await HTTPTestClient.fetch(port: port, path: path)
            XCTAssertTrue(r.status == 404 || (path == "/?" && r.status == 200), "\(path.prefix(40)): \(r.status)")
        }
        let r = try await HTTPTestClient.fetch(port: port, path: "/results.json")
        XCTAssertEqual(r.status, 200)
    }

    /// Requests that are not HTTP, or broken HTTP, get an error or a closed connection, never a crash;
    /// the server answers the next request as before.
    func testMalformedRequestsDoNotStopTheServer() async throws {
        let server = try await start(try perBallotPoll())
        let port = server.address.port
        let junk: [[UInt8]] = [
            Array("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}".utf8),   // a TLS hello
            Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n".utf8),
            Array("GET /\u{0}x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8),
            Array("G\u{7f}T / HTTP/9.9\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\n".utf8) + Array(repeating: UInt8(ascii: "a"), count: 100_000) + Array("\r\n\r\n".utf8),
            (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) },
        ]
        for bytes in junk {
            let reply = try await HTTPTestClient.raw(port: port, bytes: bytes)
            let text = String(decoding: reply, as: UTF8.self)
            XCTAssertFalse(text.hasPrefix("HTTP/1.1 200"), text)
            XCTAssertFalse(text.contains(testCode.description), text)
        }
        let r = try await HTTPTestClient.fetch(port: port, path: "/results.json")
        XCTAssertEqual(r.status, 200)
    }

    /// With a token (any address off loopback has one), a request without it or with another one is
    /// 403 on every path; with it, every endpoint answers.
    func testATokenIsRequiredWhenSet() async throws {
        let token = ProjectorAccess.randomToken()
        let server = try await start(try perBallotPoll(), token: token)
        let port = server.address.port
        XCTAssertEqual(server.url, "http://127.0.0.1:\(port)/?token=\(token)")
        let wrong = String(token.reversed()), short = String(token.dropLast())
        for path in ["/", "/results.json", "/events", "/nope"] {
            for query in ["", "?token=", "?token=\(wrong)", "?token=\(short)", "?token=\(token)x", "?Token=\(token)"] {
                let r = try await HTTPTestClient.fetch(port: port, path: path + query)
                XCTAssertEqual(r.status, 403, "\(path)\(query)")
                XCTAssertFalse(r.text.contains(testCode.description))
            }
        }
        for path in ["/", "/results.json"] {
            let r = try await HTTPTestClient.fetch(port: port, path: path + "?token=\(token)")
            XCTAssertEqual(r.status, 200, path)
        }
        var events = try await EventReader(port: port, query: "?token=\(token)")
        XCTAssertEqual(events.stream.status, 200)
        _ = try await events.snapshot { _ in true }
        await events.stream.close()
    }

    func testOffLoopbackWithoutATokenDoesNotStart() async throws {
        do {
            _ = try await ProjectorServer.start(controller: try perBallotPoll(),
                                                address: ProjectorAddress(host: "0.0.0.0", port: 0), token: nil)
            XCTFail("started without a token off loopback")
        } catch let error as ProjectorServerError {
            XCTAssertEqual(error, .tokenRequired(ProjectorAddress(host: "0.0.0.0", port: 0)))
        }
    }

    /// Without a token (loopback), a request must name this machine as its host: a page of another
    /// site whose name was rebound to 127.0.0.1 gets 403.
    func testALoopbackServerRefusesOtherHostNames() async throws {
        let server = try await start(try perBallotPoll())
        let port = server.address.port
        for host in ["evil.example", "evil.example:\(port)", "127.0.0.1.evil.example", "localhost.evil", "10.0.0.1:\(port)"] {
            let r = try await HTTPTestClient.fetch(port: port, path: "/results.json", hostHeader: host)
            XCTAssertEqual(r.status, 403, host)
        }
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST", "127.0.0.2:\(port)"] {
            let r = try await HTTPTestClient.fetch(port: port, path: "/results.json", hostHeader: host)
            XCTAssertEqual(r.status, 200, host)
        }
    }

    func testAPortInUseIsAnErrorNamingTheAddress() async throws {
        let server = try await start(try perBallotPoll())
        do {
            _ = try await ProjectorServer.start(controller: try perBallotPoll(), address: server.address, token: nil)
            XCTFail("a second server on \(server.address)")
        } catch {
            XCTAssertTrue("\(error)".hasPrefix("cannot serve the projector page on \(server.address)"), "\(error)")
        }
    }

    /// Stopping the server (the tally quits or restarts) ends every open event stream, so each
    /// browser reconnects (after the `retry:` the stream began with) instead of waiting on a dead one.
    func testStoppingEndsEventStreamsWhichAskForAQuickReconnect() async throws {
        let controller = try perBallotPoll()
        let server = try await ProjectorServer.start(controller: controller, address: ProjectorAddress(port: 0), token: nil)
        var events = try await EventReader(port: server.address.port)
        _ = try await events.snapshot { _ in true }
        XCTAssertTrue(String(decoding: events.received, as: UTF8.self).hasPrefix("retry: 1000\n\n"))
        XCTAssertEqual(server.fanOut.subscriberCount, 1)
        await server.stop()
        while try await events.next() != nil {}
        XCTAssertEqual(server.fanOut.subscriberCount, 0)
    }

    /// A browser that leaves is forgotten at once, not at the next change.
    func testABrowserThatLeavesIsForgotten() async throws {
        let server = try await start(try perBallotPoll())
        var a = try await EventReader(port: server.address.port)
        var b = try await EventReader(port: server.address.port)
        _ = try await a.snapshot { _ in true }
        _ = try await b.snapshot { _ in true }
        XCTAssertEqual(server.fanOut.subscriberCount, 2)
        await a.stream.close()
        try await eventually("the server forgets the browser that left") { server.fanOut.subscriberCount == 1 }
        await b.stream.close()
    }

    /// A connection that sends nothing, or half a request's head, is closed once idle for the idle
    /// timeout, so silent connections cannot hold every slot; an event stream opened before them is a
    /// response under way and stays open past the timeout: a ballot still reaches it.
    func testAnIdleConnectionIsClosedButAnEventStreamStaysOpen() async throws {
        let controller = try perBallotPoll()
        let server = try await ProjectorServer.start(controller: controller, address: ProjectorAddress(port: 0), token: nil,
                                                     idleTimeout: .milliseconds(300))
        addTeardownBlock { await server.stop() }
        let port = server.address.port
        let clock = ContinuousClock()
        let opened = clock.now
        var events = try await EventReader(port: port)
        _ = try await events.snapshot { _ in true }
        // Each would wait 20 s for the server to close it; the server does after 300 ms.
        async let silent = HTTPTestClient.raw(port: port, bytes: [], timeout: .seconds(20))
        async let half = HTTPTestClient.raw(port: port, bytes: Array("GET /results.json HTTP/1.1\r\nHost: 127".utf8),
                                            timeout: .seconds(20))
        let started = clock.now
        let (nothing, _) = try await (silent, half)
        let closedAfter = started.duration(to: clock.now)
        XCTAssertEqual(nothing, [])
        XCTAssertLessThan(closedAfter, .seconds(10), "idle connections were not closed by the server")
        XCTAssertGreaterThanOrEqual(opened.duration(to: clock.now), .milliseconds(300))
        await controller.ingest(anonymousReport(voter: 1, answer: .choice(1)))
        let (after, _) = try await events.snapshot { $0.voters == 1 }
        XCTAssertEqual(after.results?.bars.map(\.count), [0, 1, 0, 0])
        await events.stream.close()
    }
}
