import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 response as ``RawHTTPConnection`` read it.
public struct RawHTTPResponse: Sendable {
    /// The status code.
    public let status: Int
    /// Header names in lower case to their values.
    public let headers: [String: [String]]
    /// The body's bytes.
    public let body: [UInt8]
    /// The body as UTF-8 text.
    public var text: String { String(decoding: body, as: UTF8.self) }
    /// The body parsed as a JSON object (Foundation), or `nil`.
    public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    /// `error.code` of a JSON error answer.
    public var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    /// The first value of header `name` (lower case).
    public func header(_ name: String) -> String? { headers[name]?.first }
}

/// A plain TCP connection to a test HTTP server that sends raw bytes (malformed requests
/// included) and reads HTTP/1.1 responses framed by Content-Length (or the connection's end).
public final class RawHTTPConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port`.
    /// - Throws: `POSIXError` `.ECONNREFUSED` when the connection cannot be made.
    public init(port: UInt16) throws {
        // The socket is this object's only once connected. A class initializer that throws after
        // its stored properties are set still runs deinit: closing on failure here and again in
        // deinit closed the number twice, and between the two another thread of the test process
        // could have been given it (a gateway child's log pipe, a keychain directory: CI saw
        // both closed under their owners while connections were refused during restarts).
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(s)
            throw POSIXError(.ECONNREFUSED)
        }
        fd = s
    }

    deinit { close(fd) }

    /// Sends `bytes` whole (a peer that closes early ends the write quietly).
    public func send(_ bytes: [UInt8]) { _ = sendCounting(bytes) }

    /// Sends `bytes` whole, or until the peer stops taking them.
    /// - Returns: the bytes sent.
    public func sendCounting(_ bytes: [UInt8]) -> Int {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { break }
            offset += n
        }
        return offset
    }

    /// Sends `text` as UTF-8.
    public func send(_ text: String) { send(Array(text.utf8)) }

    /// Reads one response; `nil` when the connection ended before a whole one.
    public func readResponse() -> RawHTTPResponse? {
        while true {
            if let end = headerEnd() {
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                var lines = head.components(separatedBy: "\r\n")
                let statusLine = lines.removeFirst().split(separator: " ")
                guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
                var headers: [String: [String]] = [:]
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers[line[..<colon].lowercased(), default: []].append(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                }
                let bodyStart = end + 4
                if let length = headers["content-length"]?.first.flatMap({ Int($0) }) {
                    while buffer.count < bodyStart + length { guard fill() else { return nil } }
                    let body = Array(buffer[bodyStart..<(bodyStart + length)])
                    buffer.removeFirst(bodyStart + length)
                    return RawHTTPResponse(status: status, headers: headers, body: body)
                }
                while fill() {}
                let body = Array(buffer[bodyStart...])
                buffer.removeAll()
                return RawHTTPResponse(status: status, headers: headers, body: body)
            }
            guard fill() else { return nil }
        }
    }

    /// `true` when the server closed the connection (a read returns end of file).
    public func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }

    private func headerEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { return false }
        buffer += chunk[..<n]
        return true
    }
}

/// Sends one request on a new connection and reads the answer.
/// - Parameters:
///   - port: the server's port on 127.0.0.1.
///   - method: e.g. `POST`.
///   - path: path and query.
///   - headers: extra header lines (`Host` and, with a body, `Content-Length` are added unless given).
///   - body: the body's bytes.
public func rawHTTP(port: UInt16, _ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> RawHTTPResponse? {
    let c = try RawHTTPConnection(port: port)
    var head = "\(method) \(path) HTTP/1.1\r\n"
    if !headers.contains(where: { $0.0.lowercased() == "host" }) { head += "Host: 127.0.0.1\r\n" }
    for (k, v) in headers { head += "\(k): \(v)\r\n" }
    if !body.isEmpty && !headers.contains(where: { $0.0.lowercased() == "content-length" || $0.0.lowercased() == "transfer-encoding" }) {
        head += "Content-Length: \(body.count)\r\n"
    }
    head += "Connection: close\r\n\r\n"
    c.send(Array(head.utf8) + body)
    return c.readResponse()
}
