import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ProjectorPage

/// Answers the projector's requests. Read-only: every path takes GET only (anything else is 405), a
/// request without access is 403 (`ProjectorAccess`), an unknown path 404.
///
/// - `/`: the page (`ProjectorPage`).
/// - `/results.json`: the latest snapshot (`ProjectorSnapshot`), the same the page shows.
/// - `/chart.svg`: that snapshot's results as an SVG chart (`ResultsChart`, as the export draws it),
///   for slides; 404 while the counts are hidden.
/// - `/events`: server-sent events, one `snapshot` event per change, the latest one first.
public struct ProjectorResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    public let access: ProjectorAccess
    public let fanOut: SnapshotFanOut
    /// Milliseconds a browser waits before reconnecting a dropped event stream.
    public let retryMilliseconds: Int

    public init(access: ProjectorAccess, fanOut: SnapshotFanOut, retryMilliseconds: Int = 1000) {
        self.access = access
        self.fanOut = fanOut
        self.retryMilliseconds = retryMilliseconds
    }

    public func respond(to request: Request, context: Context) async throws -> Response {
        if let refusal = Self.refusal(of: request, access: access) { return refusal }
        switch request.uri.path {
        case "/":
            return Response(status: .ok, headers: Self.headers(type: "text/html; charset=utf-8", extra: [
                .contentSecurityPolicy: Self.contentSecurityPolicy,
            ]), body: ResponseBody(byteBuffer: Self.page))
        case "/results.json":
            guard let frame = fanOut.latest else {
                return Self.text(.serviceUnavailable, "no snapshot yet\n", extra: [.retryAfter: "1"])
            }
            return Response(status: .ok, headers: Self.headers(type: "application/json"),
                            body: ResponseBody(byteBuffer: frame.json))
        case "/chart.svg":
            guard let frame = fanOut.latest else {
                return Self.text(.serviceUnavailable, "no snapshot yet\n", extra: [.retryAfter: "1"])
            }
            // While the counts are hidden there is no chart to send: nothing of them leaves the tally.
            guard let svg = frame.svg else { return Self.text(.notFound, "the results are hidden\n") }
            return Response(status: .ok, headers: Self.headers(type: "image/svg+xml", extra: [
                .contentDisposition: "attachment; filename=\"clicker-results.svg\"",
            ]), body: ResponseBody(byteBuffer: svg))
        case "/events":
            return events(request)
        default:
            return Self.text(.notFound, "not found\n")
        }
    }

    /// The answer to a request refused whatever its path (not GET: 405; no access: 403), or nil.
    /// `ProjectorServer` closes the connection of a refused request once it is answered.
    static func refusal(of request: Request, access: ProjectorAccess) -> Response? {
        guard request.method == .get else {
            return text(.methodNotAllowed, "the projector page is read-only: GET only\n", extra: [.allow: "GET", .connection: "close"])
        }
        guard access.permits(token: request.uri.queryParameters["token"], host: request.head.authority) else {
            return text(.forbidden, "a valid token is needed: use the URL the tally printed\n", extra: [.connection: "close"])
        }
        return nil
    }

    /// The event stream: `retry:`, then the latest snapshot and each new one until the browser leaves
    /// or the server stops.
    func events(_ request: Request) -> Response {
        guard let stream = fanOut.subscribe() else {
            return Self.text(.serviceUnavailable, "too many browsers connected\n", extra: [.retryAfter: "5"])
        }
        let prelude = ByteBuffer(string: "retry: \(retryMilliseconds)\n\n")
        return Response(status: .ok, headers: Self.headers(type: "text/event-stream", extra: [.connection: "keep-alive"]),
                        body: ResponseBody { writer in
            try await writer.write(prelude)
            // Ends when the browser closes its side (the request stream ends) or the fan-out finishes.
            try await request.body.consumeWithCancellationOnInboundClose { _ in
                for await frame in stream {
                    try await writer.write(frame.event)
                }
            }
            try await writer.finish(nil)
        })
    }

    static let page = ByteBuffer(bytes: ProjectorPage.bytes)

    /// Only the page's own inline style and script run; it connects to this origin only and loads
    /// nothing from anywhere.
    static let contentSecurityPolicy: String = {
        func hash(_ text: String) -> String { "'sha256-" + Data(SHA256.hash(data: Data(text.utf8))).base64EncodedString() + "'" }
        return "default-src 'none'; style-src \(hash(ProjectorPage.style)); script-src \(hash(ProjectorPage.script)); "
            + "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }()

    // A constant name made of token characters: the initialiser cannot return nil for it.
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!

    static func headers(type: String, extra: HTTPFields = [:]) -> HTTPFields {
        var h: HTTPFields = [
            .contentType: type,
            .cacheControl: "no-store",
            .xContentTypeOptions: "nosniff",
            referrerPolicy: "no-referrer",
        ]
        h.append(contentsOf: extra)
        return h
    }

    static func text(_ status: HTTPResponse.Status, _ message: String, extra: HTTPFields = [:]) -> Response {
        Response(status: status, headers: headers(type: "text/plain; charset=utf-8", extra: extra),
                 body: ResponseBody(byteBuffer: ByteBuffer(string: message)))
    }
}
