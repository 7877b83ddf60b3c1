import ClickerTestSupport
import ProjectorPage
import ProjectorTestSupport
import ProjectorWeb
import XCTest

/// The URLs printed for the page: a wildcard address (`0.0.0.0`, `::`) is no address another machine
/// can open, so the page is offered at each address of this machine, loopback last.
final class ProjectorURLTests: XCTestCase {
    let machine = ["127.0.0.1", "192.168.1.20", "10.0.0.5", "::1", "2001:db8::7", "fe80::1c2:3ff:fe4d:5e6f", "192.168.1.20"]

    func testAWildcardAddressGivesAURLPerAddressOfTheMachine() {
        XCTAssertEqual(ProjectorAddress(host: "0.0.0.0", port: 8080).urls(token: "ab", machineAddresses: machine), [
            "http://192.168.1.20:8080/?token=ab", "http://10.0.0.5:8080/?token=ab", "http://127.0.0.1:8080/?token=ab",
        ])
        // `::` takes IPv4 too; a link-local IPv6 address needs a zone no browser URL carries: left out.
        XCTAssertEqual(ProjectorAddress(host: "::", port: 8080).urls(token: "ab", machineAddresses: machine), [
            "http://192.168.1.20:8080/?token=ab", "http://10.0.0.5:8080/?token=ab", "http://[2001:db8::7]:8080/?token=ab",
            "http://127.0.0.1:8080/?token=ab", "http://[::1]:8080/?token=ab",
        ])
        // Loopback is always offered, whatever the interfaces say.
        XCTAssertEqual(ProjectorAddress(host: "0.0.0.0", port: 80).urls(token: "ab", machineAddresses: ["192.0.2.1"]),
                       ["http://192.0.2.1:80/?token=ab", "http://127.0.0.1:80/?token=ab"])
        XCTAssertEqual(ProjectorAddress(host: "0.0.0.0", port: 80).urls(token: "ab", machineAddresses: []),
                       ["http://127.0.0.1:80/?token=ab"])
    }

    func testAnAddressOfItsOwnIsItsOwnURL() {
        XCTAssertEqual(ProjectorAddress(host: "192.168.1.20", port: 8080).urls(token: "ab", machineAddresses: machine),
                       ["http://192.168.1.20:8080/?token=ab"])
        XCTAssertEqual(ProjectorAddress(host: "127.0.0.1", port: 8080).urls(token: nil, machineAddresses: machine),
                       ["http://127.0.0.1:8080/"])
        XCTAssertEqual(ProjectorAddress(host: "::1", port: 8080).urls(token: nil, machineAddresses: machine),
                       ["http://[::1]:8080/"])
        for wildcard in ["0.0.0.0", "::", "0:0:0:0:0:0:0:0", "00.0.000.0"] {
            XCTAssertTrue(ProjectorAddress(host: wildcard, port: 1).isWildcard, wildcard)
        }
        for other in ["127.0.0.1", "::1", "10.0.0.0", "0.0.0.1", "localhost", "0.0.0"] {
            XCTAssertFalse(ProjectorAddress(host: other, port: 1).isWildcard, other)
        }
    }

    /// A server on 0.0.0.0 gives the URLs of the addresses it is given, with its port and token, and
    /// the loopback one opens the page.
    func testAServerOnAWildcardAddressGivesURLsThatOpenThePage() async throws {
        let token = ProjectorAccess.randomToken()
        let server = try await ProjectorServer.start(controller: try perBallotPoll(),
                                                     address: ProjectorAddress(host: "0.0.0.0", port: 0), token: token)
        addTeardownBlock { await server.stop() }
        let port = server.address.port
        XCTAssertNotEqual(port, 0)
        XCTAssertEqual(server.urls(machineAddresses: ["192.0.2.9", "127.0.0.1"]),
                       ["http://192.0.2.9:\(port)/?token=\(token)", "http://127.0.0.1:\(port)/?token=\(token)"])
        XCTAssertFalse(server.url.contains("0.0.0.0"), server.url)
        let r = try await HTTPTestClient.fetch(port: port, path: "/?token=\(token)")
        XCTAssertEqual(r.status, 200)
    }

    /// The machine's own addresses (getifaddrs): loopback is among them.
    func testTheMachinesAddressesIncludeLoopback() {
        XCTAssertTrue(MachineAddresses.current().contains("127.0.0.1"), "\(MachineAddresses.current())")
    }
}
