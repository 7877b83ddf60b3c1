import ArgumentParser
import ClickerCommandLine
import Foundation
import Logging
import ProjectorPage
import ProjectorWeb
import TallyDaemon

/// The projector page's options, for a run in this terminal and for the daemon.
struct WebArguments: ParsableArguments {
    @Option(help: ArgumentHelp("Serve the projector page (live results in a browser) on [ADDRESS:]PORT; the address defaults to 127.0.0.1, port 0 picks a free one. Read-only.",
                               valueName: "[address:]port"))
    var web: String?

    @Flag(help: "Let --web listen on an address other than loopback. The page shows the join code: anyone who has its URL (printed once, with a read-only token) can vote.")
    var webPublic = false

    func validate() throws {
        guard let web else {
            if webPublic { throw ValidationError("--web-public goes with --web ADDRESS:PORT") }
            return
        }
        let address: ProjectorAddress
        do { address = try ProjectorAddress(parsing: web) } catch { throw ValidationError("--web: \(error)") }
        if !address.isLoopback, !webPublic {
            throw ValidationError("--web \(address) is reachable from other machines and the page shows the join code: add --web-public to mean it, or use 127.0.0.1")
        }
    }

    /// Starts the server when `--web` was given; says where it listens (the token's only appearance:
    /// one URL, or one per address of this machine for a wildcard address) through `announce`, and
    /// warns off loopback.
    func start(controller: PollController, logger: Logger,
               announce: @Sendable (String) -> Void) async throws -> ProjectorServer? {
        guard let web else { return nil }
        let address: ProjectorAddress
        do { address = try ProjectorAddress(parsing: web) } catch { throw Failure("--web: \(error)") }
        let token = address.isLoopback ? nil : ProjectorAccess.randomToken()
        let server: ProjectorServer
        do { server = try await ProjectorServer.start(controller: controller, address: address, token: token, logger: logger) }
        catch { throw Failure("\(error)") }
        if !address.isLoopback {
            announce("warning: the projector page listens on \(server.address), beyond this machine, and shows the join code: whoever has its URL can vote")
            announce(ProjectorServer.plainHTTPWarning)
        }
        // A wildcard address is no URL: one per address of this machine, those others can reach first.
        for url in server.urls() { announce("projector page: \(url)") }
        return server
    }
}
