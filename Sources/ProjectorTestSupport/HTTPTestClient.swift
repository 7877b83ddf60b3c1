import NIOCore
import NIOHTTP1
import NIOPosix

/// A minimal HTTP/1.1 client on NIO for the projector's tests and benchmark: one request per
/// connection, the whole response (`fetch`), or a response whose body is read as it streams
/// (`open`, for server-sent events). Non-blocking: nothing waits on a thread of the cooperative pool.
public enum HTTPTestClient {
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The first header of that name (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// Sends one request and reads the whole response; throws `timedOut` when it has not ended
    /// within `timeout` (an endless stream where a plain response was expected).
    public static func fetch(host: String = "127.0.0.1", port: Int, path: String, method: String = "GET",
                             headers: [(String, String)] = [], hostHeader: String? = nil,
                             timeout: Duration = .seconds(10)) async throws -> Response {
        let stream = try await open(host: host, port: port, path: path, method: method, headers: headers,
                                    hostHeader: hostHeader)
        defer { Task { await stream.close() } }
        return try await withThrowingTaskGroup(of: Response?.self) { group in
            group.addTask {
                var body: [UInt8] = []
                for try await chunk in stream.body { body += chunk }
                return Response(status: stream.status, headers: stream.headers, body: body)
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else { throw HTTPTestClientError.timedOut(path) }
            return first
        }
    }

    /// An open response: status and headers, and the body as it arrives.
    public struct Stream: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        /// Body chunks as they arrive; ends with the response (or when the connection closes).
        public var body: AsyncThrowingStream<[UInt8], any Error>
        let channel: any Channel

        /// The first header of that name (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// Closes the connection (a browser leaving).
        public func close() async {
            try? await channel.close()
        }
    }

    /// Sends one request and returns once the response's head has arrived.
    public static func open(host: String = "127.0.0.1", port: Int, path: String, method: String = "GET",
                            headers: [(String, String)] = [], hostHeader: String? = nil) async throws -> Stream {
        let (parts, continuation) = AsyncThrowingStream<HTTPClientResponsePart, any Error>.makeStream()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(Collector(continuation: continuation))
                }
            }
            .connect(host: host, port: port).get()
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: method), uri: path)
        head.headers.add(name: "Host", value: hostHeader ?? "\(host.contains(":") ? "[\(host)]" : host):\(port)")
        for (n, v) in headers { head.headers.add(name: n, value: v) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()

        var iterator = parts.makeAsyncIterator()
        guard case .head(let responseHead)? = try await iterator.next() else {
            try? await channel.close()
            throw HTTPTestClientError.noResponse
        }
        let (body, bodyContinuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let pump = Task {
            do {
                while let part = try await iterator.next() {
                    switch part {
                    case .body(let buffer): bodyContinuation.yield(Array(buffer.readableBytesView))
                    case .end: bodyContinuation.finish(); return
                    case .head: break
                    }
                }
                bodyContinuation.finish()
            } catch {
                bodyContinuation.finish(throwing: error)
            }
        }
        bodyContinuation.onTermination = { _ in pump.cancel() }
        return Stream(status: Int(responseHead.status.code),
                      headers: responseHead.headers.map { ($0.name, $0.value) }, body: body, channel: channel)
    }

    /// Sends `bytes` as they are (not necessarily HTTP) and returns what comes back until the server
    /// closes the connection or `timeout` passes.
    public static func raw(host: String = "127.0.0.1", port: Int, bytes: [UInt8],
                           timeout: Duration = .seconds(10)) async throws -> [UInt8] {
        let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RawCollector(continuation: continuation))
                }
            }
            .connect(host: host, port: port).get()
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
        let closer = Task {
            try? await Task.sleep(for: timeout)
            try? await channel.close()
        }
        defer { closer.cancel() }
        var received: [UInt8] = []
        for try await chunk in chunks { received += chunk }
        return received
    }

    final class RawCollector: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation

        init(continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation) {
            self.continuation = continuation
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            continuation.yield(Array(unwrapInboundIn(data).readableBytesView))
        }

        func channelInactive(context: ChannelHandlerContext) {
            continuation.finish()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            continuation.finish()
            context.close(promise: nil)
        }
    }

    /// Hands the response's parts to a stream; the stream ends when the connection closes.
    final class Collector: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let continuation: AsyncThrowingStream<HTTPClientResponsePart, any Error>.Continuation

        init(continuation: AsyncThrowingStream<HTTPClientResponsePart, any Error>.Continuation) {
            self.continuation = continuation
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            continuation.yield(unwrapInboundIn(data))
        }

        func channelInactive(context: ChannelHandlerContext) {
            continuation.finish()
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            continuation.finish(throwing: error)
            context.close(promise: nil)
        }
    }
}

public enum HTTPTestClientError: Error, Sendable {
    case noResponse
    /// The response did not end in time.
    case timedOut(String)
}

/// Reads server-sent events from a byte stream: each event's `event:` name and `data:` text.
public struct ServerSentEvents: Sendable {
    public struct Event: Sendable, Equatable {
        public var name: String
        public var data: String
        public var id: String?
    }

    private var pending: [UInt8] = []

    public init() {}

    /// Appends received bytes and returns the events they complete (a blank line ends an event).
    public mutating func feed(_ bytes: [UInt8]) -> [Event] {
        pending += bytes
        var events: [Event] = []
        while let end = Self.blankLine(in: pending) {
            let block = String(decoding: pending[..<end.start], as: UTF8.self)
            pending.removeSubrange(..<end.end)
            var name = "message", data: [String] = [], id: String?
            var any = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") { continue }
                let (field, value) = Self.field(line)
                switch field {
                case "event": name = value; any = true
                case "data": data.append(value); any = true
                case "id": id = value
                default: break
                }
            }
            if any { events.append(Event(name: name, data: data.joined(separator: "\n"), id: id)) }
        }
        return events
    }

    static func field(_ line: Substring) -> (String, String) {
        guard let colon = line.firstIndex(of: ":") else { return (String(line), "") }
        var value = line[line.index(after: colon)...]
        if value.first == " " { value = value.dropFirst() }
        return (String(line[..<colon]), String(value))
    }

    static func blankLine(in bytes: [UInt8]) -> (start: Int, end: Int)? {
        guard bytes.count >= 2 else { return nil }
        for i in 0..<(bytes.count - 1) where bytes[i] == 0x0A && bytes[i + 1] == 0x0A { return (i, i + 2) }
        return nil
    }
}
