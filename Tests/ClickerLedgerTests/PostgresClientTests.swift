import PostgresClient
import PostgresTestSupport
import XCTest

/// The libpq client against a real server: errors people can act on, values both ways, transactions.
final class PostgresClientTests: XCTestCase {
    override class func tearDown() { SharedServer.stop() }

    func testBadURLsAreRefusedBeforeConnecting() {
        for url in ["mysql://localhost/db", "localhost:5432", "", "postgres://u@host:notaport/db", "postgres://u:sesame@[::1/db",
                    "postgres://u@127.0.0.1:1/db?sslmode=bogus", "postgres://u@127.0.0.1:1/db?foo=bar"] {
            XCTAssertThrowsError(try PostgresConnection(url: url), url) { error in
                XCTAssertEqual((error as? PostgresError)?.kind, .badURL, "\(url): \(error)")
                XCTAssertTrue("\(error)".hasPrefix("bad PostgreSQL URL: "), "\(error)")
                XCTAssertFalse("\(error)".contains("sesame"), "the password is not repeated: \(error)")
            }
        }
    }

    func testAServerThatIsDownIsUnreachable() throws {
        let port = try PostgresTestServer.freePort()
        XCTAssertThrowsError(try PostgresConnection(url: "postgres://u:p@127.0.0.1:\(port)/db")) { error in
            XCTAssertEqual((error as? PostgresError)?.kind, .unreachable, "\(error)")
            XCTAssertTrue("\(error)".contains("Connection refused"), "\(error)")
            XCTAssertTrue("\(error)".contains("port \(port) failed"), "a one-letter password does not blot the message: \(error)")
            XCTAssertFalse("\(error)".contains("\n"), "one line: \(error)")
        }
    }

    func testAWrongPasswordIsAnAuthenticationError() throws {
        let server = try SharedServer.get()
        XCTAssertThrowsError(try PostgresConnection(url: server.url(password: "not-the-password"))) { error in
            XCTAssertEqual((error as? PostgresError)?.kind, .authentication, "\(error)")
            XCTAssertTrue("\(error)".contains("password authentication failed"), "\(error)")
            XCTAssertFalse("\(error)".contains("not-the-password"), "the password is not repeated: \(error)")
        }
        XCTAssertGreaterThanOrEqual(try PostgresConnection(url: server.url()).serverVersion, 100_000)
    }

    func testRefusedStatementsCarryTheirSQLState() throws {
        let db = try PostgresConnection(url: try SharedServer.get().url())
        for (sql, state) in [("SELECT 1/0", "22012"), ("SELEC 1", "42601"), ("SELECT * FROM no_such_table", "42P01")] {
            XCTAssertThrowsError(try db.execute(sql), sql) { error in
                XCTAssertEqual((error as? PostgresError)?.sqlState, state, "\(sql): \(error)")
                XCTAssertTrue("\(error)".hasPrefix("PostgreSQL error \(state): "), "\(error)")
            }
        }
        // The connection still works after refusals.
        XCTAssertEqual(try db.execute("SELECT 2").rows.first?.int(0), 2)
    }

    func testValuesRoundTripAsParametersNeverAsSQLText() throws {
        let db = try PostgresConnection(url: try SharedServer.get().url())
        let bytes = (0...255).map(UInt8.init)
        let text = "it's \"quoted\"; DROP TABLE x; -- ünïcode"
        let row = try XCTUnwrap(db.execute("SELECT $1::bytea, $2::text, $3::bigint, $4::boolean, $5::text IS NULL",
                                           [.bytes(bytes), .text(text), .int(.min), .bool(true), .null]).rows.first)
        XCTAssertEqual(try row.bytes(0), bytes)
        XCTAssertEqual(try row.text(1), text)
        XCTAssertEqual(try row.int(2), .min)
        XCTAssertEqual(try row.bool(3), true)
        XCTAssertEqual(try row.bool(4), true)
        // Typed reads of the wrong type or a NULL throw instead of trapping.
        let other = try XCTUnwrap(db.execute("SELECT 'x', NULL::bigint").rows.first)
        XCTAssertThrowsError(try other.int(0)) { XCTAssertEqual(($0 as? PostgresError)?.kind, .badValue) }
        XCTAssertThrowsError(try other.int(1)) { XCTAssertEqual(($0 as? PostgresError)?.kind, .badValue) }
        XCTAssertThrowsError(try other.bytes(0)) { XCTAssertEqual(($0 as? PostgresError)?.kind, .badValue) }
        XCTAssertThrowsError(try other.text(2)) { XCTAssertEqual(($0 as? PostgresError)?.kind, .badValue) }
    }

    func testATransactionThatThrowsLeavesNothing() throws {
        let db = try PostgresConnection(url: try SharedServer.database())
        try db.execute("CREATE TABLE t (n integer PRIMARY KEY)")
        XCTAssertThrowsError(try db.transaction {
            try db.execute("INSERT INTO t VALUES (1)")
            try db.execute("INSERT INTO t VALUES (1)")   // unique violation
        }) { XCTAssertEqual(($0 as? PostgresError)?.sqlState, "23505") }
        try db.transaction { try db.execute("INSERT INTO t VALUES (2)") }
        XCTAssertEqual(try db.execute("SELECT n FROM t").rows.map { try $0.int(0) }, [2])
        XCTAssertEqual(try db.execute("INSERT INTO t VALUES (3), (4)").affected, 2)
    }

    func testStatementsSentTogetherReportTheOneRefusedAndLeaveTheConnectionUsable() throws {
        let db = try PostgresConnection(url: try SharedServer.database())
        try db.execute("CREATE TABLE t (n integer PRIMARY KEY)")
        let insert = try db.prepare("INSERT INTO t VALUES ($1)", as: "insert_n")
        XCTAssertThrowsError(try db.prepare("SELECT 1", as: "insert_n")) { XCTAssertEqual(($0 as? PostgresError)?.sqlState, "42P05") }
        // 250 statements in rounds of 100.
        try db.executeEach(insert, (1...250).map { [.int(Int64($0))] })
        XCTAssertEqual(try db.execute("SELECT count(*), sum(n) FROM t").rows.first?.values, ["250", "31375"])
        // The 103rd (index 102) repeats a key: it is named, and its round (the second) is undone.
        let lists: [[PostgresValue]] = (251...400).map { [.int(Int64($0))] }
        var withRepeat = lists
        withRepeat[102] = [.int(7)]
        XCTAssertThrowsError(try db.executeEach(insert, withRepeat)) { error in
            XCTAssertEqual((error as? PostgresError)?.sqlState, "23505", "\(error)")
            XCTAssertEqual((error as? PostgresError)?.statement, 102, "\(error)")
        }
        XCTAssertEqual(try db.execute("SELECT max(n) FROM t").rows.first?.int(0), 350)   // the first round committed
        // In a transaction, nothing of it stays.
        XCTAssertThrowsError(try db.transaction { try db.executeEach(insert, [[.int(1000)], [.int(1)]]) })
        XCTAssertEqual(try db.execute("SELECT count(*) FROM t WHERE n = 1000").rows.first?.int(0), 0)
        try db.execute(insert, [.int(1000)])
        XCTAssertEqual(try db.execute("SELECT count(*) FROM t WHERE n = 1000").rows.first?.int(0), 1)
    }
}
