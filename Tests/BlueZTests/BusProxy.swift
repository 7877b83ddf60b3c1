import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A relay between the central and the private bus, on a socket of its own, that can write bytes no
/// bus would send into the connection of the central's signal reader (the connection whose match rule
/// is BlueZ's signals). Every connection is relayed byte for byte in both directions on two threads.
final class BusProxy: @unchecked Sendable {
    // @unchecked Sendable: the listener and paths are immutable; `links` is guarded by its Mutex.
    let address: String
    private let path: String
    private let busPath: String
    private let listener: Int32

    /// An accepted client (its descriptor) and whether it added the signal reader's rule.
    private struct Link { var client: Int32; var isReader: Bool }
    private let links = Mutex<[Link]>([])
    /// Held while bytes are written to a client, so injected bytes never land inside a relayed chunk.
    private let writing = Mutex(())

    init(bus: PrivateBus) throws {
        guard bus.address.hasPrefix("unix:path=") else { throw HarnessError.startFailed("bus address \(bus.address)") }
        busPath = String(bus.address.dropFirst("unix:path=".count).prefix { $0 != "," })
        path = bus.directory.appendingPathComponent("proxy").path
        address = "unix:path=\(path)"
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var addr = Self.socketAddress(path)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw HarnessError.startFailed("cannot listen on \(path)") }
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// Stops accepting and ends every relayed connection.
    func stop() {
        _ = shutdown(listener, Int32(SHUT_RDWR))
        for link in links.withLock({ $0 }) { _ = shutdown(link.client, Int32(SHUT_RDWR)) }
    }

    /// Writes `bytes` to the signal reader's connection(s) open now; the number of them.
    @discardableResult
    func injectIntoSignalReader(_ bytes: [UInt8]) -> Int {
        let readers = links.withLock { $0.filter(\.isReader).map(\.client) }
        writing.withLock { _ in
            for fd in readers { _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        }
        return readers.count
    }

    static func socketAddress(_ path: String) -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &addr.sun_path) { b in for (i, c) in path.utf8.enumerated() { b[i] = c } }
        return addr
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = Self.socketAddress(busPath)
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard rc == 0 else {
                _ = close(client)
                _ = close(upstream)
                continue
            }
            links.withLock { $0.append(Link(client: client, isReader: false)) }
            Thread.detachNewThread { [self] in relayUp(from: client, to: upstream) }
            Thread.detachNewThread { [self] in relayDown(from: upstream, to: client) }
        }
    }

    /// Client to bus; marks the link as the signal reader's when its rule goes by.
    private func relayUp(from client: Int32, to upstream: Int32) {
        var seen: [UInt8] = []
        var found = false
        let rule = Array("type='signal',sender='org.bluez'".utf8)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            if !found && seen.count < 8192 {
                seen += buffer[0..<n]
                if seen.count >= rule.count, (0...(seen.count - rule.count)).contains(where: { seen[$0..<($0 + rule.count)].elementsEqual(rule) }) {
                    links.withLock { ls in for i in ls.indices where ls[i].client == client { ls[i].isReader = true } }
                    found = true
                }
            }
            _ = buffer.withUnsafeBytes { send(upstream, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
        }
        _ = shutdown(upstream, Int32(SHUT_RDWR))
    }

    /// Bus to client.
    private func relayDown(from upstream: Int32, to client: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(upstream, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { break }
            writing.withLock { _ in _ = buffer.withUnsafeBytes { send(client, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) } }
        }
        _ = shutdown(client, Int32(SHUT_RDWR))
        links.withLock { $0.removeAll { $0.client == client } }
        _ = close(client)
        _ = close(upstream)
    }
}
