import ClickerTransport

/// Where the projector page listens: `--web [ADDRESS:]PORT`.
public struct ProjectorAddress: Sendable, Hashable, CustomStringConvertible {
    /// An IPv4 or IPv6 literal, or `localhost`.
    public var host: String
    /// 0 asks the system for a free port (the server says which).
    public var port: Int

    public init(host: String = "127.0.0.1", port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `PORT`, `ADDRESS:PORT` or `[IPv6]:PORT`. The address defaults to 127.0.0.1.
    public init(parsing text: String) throws(ProjectorAddressError) {
        let t = text.trimmingCharacters(in: " \t")
        var host = "127.0.0.1"
        var portText = Substring(t)
        if t.hasPrefix("[") {
            guard let close = t.firstIndex(of: "]"), t[t.index(after: close)...].hasPrefix(":") else {
                throw .malformed(text)
            }
            host = String(t[t.index(after: t.startIndex)..<close])
            portText = t[t.index(close, offsetBy: 2)...]
            guard host.contains(":") else { throw .malformed(text) }
        } else if let colon = t.lastIndex(of: ":") {
            host = String(t[..<colon])
            portText = t[t.index(after: colon)...]
            // An IPv6 address needs its brackets, or its last group would be read as the port.
            guard !host.contains(":") else { throw .malformed(text) }
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".:-".contains($0)) }) else {
            throw .badHost(host)
        }
        guard !portText.isEmpty, portText.allSatisfy({ $0.isASCII && $0.isNumber }), portText.count <= 5,
              let port = Int(portText), port <= 65_535 else {
            throw .badPort(String(portText))
        }
        self.init(host: host, port: port)
    }

    /// Whether only this machine can reach the address: 127.0.0.0/8, ::1 or `localhost`.
    public var isLoopback: Bool {
        Self.isLoopbackHost(host)
    }

    static func isLoopbackHost(_ host: String) -> Bool {
        let h = host.lowercased()
        if h == "localhost" || h == "::1" || h == "0:0:0:0:0:0:0:1" { return true }
        let parts = h.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy({ $0.isASCII && $0.isNumber }) }) else { return false }
        let values = parts.compactMap { Int($0) }
        return values.count == 4 && values.allSatisfy { (0...255).contains($0) } && values[0] == 127
    }

    /// `127.0.0.1:8080`, `[::1]:8080`.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

public enum ProjectorAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    case badHost(String)
    case badPort(String)

    public var description: String {
        switch self {
        case .malformed(let t): "'\(t)' is not [ADDRESS:]PORT (an IPv6 address goes in brackets: [::1]:8080)"
        case .badHost(let h): "'\(h)' is not an IP address or localhost"
        case .badPort(let p): "'\(p)' is not a port (0 to 65535; 0 picks a free one)"
        }
    }
}

/// Who may read the page: on loopback without a token, elsewhere only with the read-only token the
/// server printed at its start (`?token=...` in the URL).
public struct ProjectorAccess: Sendable {
    /// Required in every request's query when set.
    public let token: String?

    public init(token: String?) {
        self.token = token
    }

    /// A fresh read-only token: 128 random bits as 32 lowercase hex digits.
    public static func randomToken<G: RandomNumberGenerator>(using rng: inout G) -> String {
        var bytes: [UInt8] = []
        for _ in 0..<2 { withUnsafeBytes(of: rng.next()) { bytes += $0 } }
        return Hex.string(bytes)
    }

    public static func randomToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return randomToken(using: &rng)
    }

    /// Whether a request may read: the token matches (compared in constant time), or none is
    /// required and the request names this machine as its host (`Host: 127.0.0.1:PORT`,
    /// `localhost`, `[::1]`), so that a web page of another site whose name was rebound to 127.0.0.1
    /// cannot read the join code from the instructor's browser.
    public func permits(token given: Substring?, host: String?) -> Bool {
        guard let token else {
            guard let host else { return false }
            return Self.isLocalHostHeader(host)
        }
        guard let given else { return false }
        let a = Array(token.utf8), b = Array(given.utf8)
        guard a.count == b.count else { return false }
        var diff: UInt8 = 0
        for i in a.indices { diff |= a[i] ^ b[i] }
        return diff == 0
    }

    /// A `Host` header (or HTTP/2 authority) that names this machine: a loopback address or
    /// `localhost`, with or without a port.
    static func isLocalHostHeader(_ host: String) -> Bool {
        var h = Substring(host)
        if h.hasPrefix("[") {
            guard let close = h.firstIndex(of: "]") else { return false }
            let rest = h[h.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && rest.dropFirst().allSatisfy(\.isNumber)) else { return false }
            h = h[h.index(after: h.startIndex)..<close]
        } else if let colon = h.lastIndex(of: ":") {
            guard h[h.index(after: colon)...].allSatisfy(\.isNumber) else { return false }
            h = h[..<colon]
        }
        return ProjectorAddress.isLoopbackHost(String(h))
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s.removeFirst() }
        while let l = s.last, set.contains(l) { s.removeLast() }
        return String(s)
    }
}
