import DBus
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import DBusTestSupport
import Synchronization
import XCTest

/// The signal reader on a private bus: its own socket, authentication, match rules and unmarshalling.
final class SignalReaderTests: XCTestCase {
    var bus: PrivateBus!

    override func setUpWithError() throws {
        bus = try PrivateBus()
    }

    override func tearDown() {
        bus?.stop()
    }

    /// The reader's batches as a stream, and its end.
    struct Opened {
        let reader: DBusSignalReader
        let batches: AsyncStream<[[DBusValue]]>
        let ended: AsyncStream<DBusError?>
    }

    func open(_ rules: [DBusMatchRule]) async throws -> Opened {
        let (batches, batchCont) = AsyncStream<[[DBusValue]]>.makeStream()
        let (ended, endCont) = AsyncStream<DBusError?>.makeStream()
        let reader = try await DBusSignalReader.open(
            .address(bus.address), matching: rules, maxBatch: 16,
            decode: { m in m.interfaceIs("org.example.Wire") ? try m.arguments() : nil },
            deliver: { batchCont.yield($0) },
            finished: { e in
                endCont.yield(e)
                endCont.finish()
                batchCont.finish()
            })
        return Opened(reader: reader, batches: batches, ended: ended)
    }

    func testMatchingSignalsArriveInOrderInBatches() async throws {
        let tx = try await DBusConnection.connect(.address(bus.address))
        defer { tx.close() }
        let opened = try await open([DBusMatchRule(interface: "org.example.Wire", member: "Tick")])
        defer { opened.reader.close() }
        // The rule is in place once `open` returns: the first signal sent after it is seen.
        try tx.emitSignal(path: "/a", interface: "org.example.Wire", name: "Other", arguments: [.int32(-1)])
        for i in 0..<100 {
            try tx.emitSignal(path: "/a", interface: "org.example.Wire", name: "Tick",
                              arguments: [.int32(Int32(i)), .stringVariantDictionary(["n": .uint16(UInt16(i))])])
        }
        var seen: [[DBusValue]] = []
        var batches = 0
        for await batch in opened.batches {
            XCTAssertLessThanOrEqual(batch.count, 16)
            batches += 1
            seen += batch
            if seen.count >= 100 { break }
        }
        XCTAssertEqual(seen.count, 100)
        XCTAssertEqual(seen.map { $0.first }, (0..<100).map { DBusValue.int32(Int32($0)) })
        XCTAssertEqual(seen.last?.last, .stringVariantDictionary(["n": .uint16(99)]))
        XCTAssertGreaterThanOrEqual(batches, 7, "at most 16 a batch")
        XCTAssertEqual(opened.reader.stats.delivered.load(ordering: .relaxed), 100)
        XCTAssertEqual(opened.reader.stats.rejected.load(ordering: .relaxed), 0)
    }

    func testCloseEndsTheReaderWithoutAnError() async throws {
        let opened = try await open([DBusMatchRule(interface: "org.example.Wire")])
        opened.reader.close()
        var it = opened.ended.makeAsyncIterator()
        let end = await it.next()
        XCTAssertEqual(end, .some(nil))
    }

    func testTheBusGoingAwayEndsTheReaderWithAnError() async throws {
        let opened = try await open([DBusMatchRule(interface: "org.example.Wire")])
        defer { opened.reader.close() }
        bus.stop()
        var it = opened.ended.makeAsyncIterator()
        let end = await it.next()
        XCTAssertEqual(end??.name, DBusError.disconnected)
    }

    func testNoBusAtTheAddressFailsOpen() async throws {
        let missing = bus.directory.appendingPathComponent("nobody-here").path
        do {
            _ = try await DBusSignalReader.open(.address("unix:path=\(missing)"), matching: [], decode: { _ in () },
                                                deliver: { _ in }, finished: { _ in })
            XCTFail("opened a reader on a socket that does not exist")
        } catch let e as DBusError {
            XCTAssertTrue(e.message.contains("connect"), e.message)
        }
    }
}

/// A stand-in for the bus on a socket of its own, to send the reader bytes no real bus would pass on:
/// it authenticates the reader, answers its greeting, then writes what the test gives it.
final class FakeBus: @unchecked Sendable {
    // @unchecked Sendable: the listening descriptor and path are immutable; the accepted connection is
    // used by the serving thread only.
    let path: String
    let listener: Int32

    init(directory: URL) throws {
        path = directory.appendingPathComponent("fake-bus").path
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { b in for (i, c) in path.utf8.enumerated() { b[i] = c } }
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 1) == 0 else { throw TestEnvironmentError("cannot listen on \(path)") }
    }

    deinit { _ = close(listener) }

    /// Serves one reader on a thread of its own: then writes `after` and closes.
    func serve(then after: [[UInt8]]) {
        Thread.detachNewThread { [self] in
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            defer { _ = close(fd) }
            var input: [UInt8] = []
            func readMore() -> Bool {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                guard n > 0 else { return false }
                input += chunk[0..<n]
                return true
            }
            func send(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) } }
            // "\0AUTH EXTERNAL …\r\n", then "BEGIN\r\n" and the two calls (Hello, AddMatch).
            while !String(decoding: input, as: UTF8.self).contains("\r\n") { guard readMore() else { return } }
            send(Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8))
            let begin = Array("BEGIN\r\n".utf8)
            var calls = 0
            while calls < 2 {
                guard let at = (0...max(0, input.count - begin.count)).first(where: { Array(input[$0..<min(input.count, $0 + begin.count)]) == begin }) else {
                    guard readMore() else { return }
                    continue
                }
                var rest = Array(input[(at + begin.count)...])
                calls = 0
                while rest.count >= 16, let n = try? rest.withUnsafeBytes({ try DBusWireMessage.frameLength($0) }), rest.count >= n {
                    calls += 1
                    rest.removeFirst(n)
                }
                if calls < 2 { guard readMore() else { return }; calls = 0 }
            }
            for serial: UInt32 in [1, 2] {
                send(WireMarshaller.message(type: 2, fields: [(5, .uint32(serial))], arguments: [], serial: 100 + serial))
            }
            for bytes in after { send(bytes) }
        }
    }
}

extension SignalReaderTests {
    func tick(_ i: Int32, serial: UInt32) -> [UInt8] {
        WireMarshaller.signal(path: "/a", interface: "org.example.Wire", member: "Tick", arguments: [.int32(i)], serial: serial,
                              bigEndian: i % 2 == 0)
    }

    /// Messages that do not parse while the framing holds are dropped and counted; bytes that cannot
    /// begin a message end the reader with an error.
    func testMalformedMessagesAreCountedAndLostFramingEndsTheReader() async throws {
        let fake = try FakeBus(directory: bus.directory)
        var badBody = WireMarshaller.signal(path: "/a", interface: "org.example.Wire", member: "Tick", arguments: [.boolean(true)],
                                            serial: 11, bigEndian: false)
        badBody[badBody.count - 4] = 2   // a boolean of 2
        var badPath = tick(5, serial: 12)
        if let slash = badPath.firstIndex(of: UInt8(ascii: "/")) { badPath[slash] = UInt8(ascii: "x") }   // path "xa"
        let garbage = Array("this is no D-Bus message".utf8)
        fake.serve(then: [tick(1, serial: 10), badBody, badPath, tick(2, serial: 13), garbage])
        let (batches, batchCont) = AsyncStream<[[DBusValue]]>.makeStream()
        let (ended, endCont) = AsyncStream<DBusError?>.makeStream()
        let reader = try await DBusSignalReader.open(
            .address("unix:path=\(fake.path)"), matching: [DBusMatchRule(interface: "org.example.Wire")],
            decode: { m in try m.arguments() }, deliver: { batchCont.yield($0) },
            finished: { e in
                endCont.yield(e)
                endCont.finish()
                batchCont.finish()
            })
        defer { reader.close() }
        var seen: [[DBusValue]] = []
        for await batch in batches { seen += batch }
        var it = ended.makeAsyncIterator()
        let end = await it.next()
        XCTAssertEqual(seen, [[.int32(1)], [.int32(2)]])
        XCTAssertEqual(reader.stats.rejected.load(ordering: .relaxed), 2, "the bad body and the bad path")
        XCTAssertEqual(end??.name, DBusError.failed)
        XCTAssertTrue(end??.message.contains("unreadable") ?? false, String(describing: end))
    }
}
