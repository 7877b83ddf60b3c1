import DBus
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
