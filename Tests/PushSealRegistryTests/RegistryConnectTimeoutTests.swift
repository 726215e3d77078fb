import Foundation
import Glibc
import PushSealRegistry
import PushSealSystem
import Testing

/// Reliability (issue 26, "fail fast when the database is gone"): a registry host that takes the
/// TCP handshake nowhere (SYNs dropped) fails the connection with libpq's `timeout expired`
/// under PushSeal's default `connect_timeout`, instead of waiting for the kernel's retransmission
/// limit (about two minutes). The listener below never accepts and its accept queue is full, so
/// Linux drops every further SYN: the same as a black-holed host.
@Suite struct RegistryConnectTimeoutTests {
    /// A loopback listener with a full accept queue, and the sockets filling it.
    struct FullListener {
        let port: UInt16
        let fds: [Int32]

        init() throws {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            addr.sin_port = 0
            let size = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, size) } }
            try #require(listener >= 0 && bound == 0 && listen(listener, 0) == 0)
            var got = sockaddr_in()
            var len = size
            _ = withUnsafeMutablePointer(to: &got) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
            port = UInt16(bigEndian: got.sin_port)
            // Fill the accept queue (backlog 0 holds one; two more make sure): non-blocking
            // connects, so one that would hang does not hold up the test.
            var fillers: [Int32] = []
            for _ in 0..<3 {
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                var to = got
                to.sin_addr.s_addr = inet_addr("127.0.0.1")
                _ = withUnsafePointer(to: &to) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, size) } }
                fillers.append(fd)
            }
            fds = [listener] + fillers
        }

        func close() { for fd in fds { _ = Glibc.close(fd) } }
    }

    @Test func anUnreachableRegistryFailsWithTheDefaultConnectTimeout() throws {
        try #require(Environment.value("PGCONNECT_TIMEOUT") == nil, "the test checks PushSeal's own default")
        let listener = try FullListener()
        defer { listener.close() }
        do {
            _ = try PostgresKeyStore(connectionString: "host=127.0.0.1 port=\(listener.port) dbname=pushseal user=pushseal sslmode=disable", kek: nil)
            Issue.record("connected to a listener that never accepts")
        } catch let e as RegistryError {
            #expect(e.code == .unavailable, "\(e)")
            #expect(e.reason.contains("timeout expired"), "\(e.reason)")
        }
    }
}
