public import Foundation

/// A local HTTP server (Python's http.server) for the media tests, started once per test
/// process. It binds 127.0.0.1 port 0, prints the port, and exits when its stdin closes
/// (when the test process ends). Used by the extension's media tests and the push-open CLI
/// media tests.
///
/// Routes:
/// - `/photo` — a PNG with `Content-Type: image/png` and no file name extension
/// - `/redirect` — 302 to `/photo`; `/to?u=URL` — 302 to URL; `/hop/N` — 302 to `/hop/N+1`, …, `/hop/9` serves the PNG
/// - `/error-page` — 200 with an HTML body (`text/html`); `/lying-png` — HTML sent as `image/png`
/// - `/missing` — 404
/// - `/huge.jpg` — a 30 MB JPEG streamed without Content-Length; `/huge-length.jpg` — with it
/// - `/stall` — accepts, reads the request, never answers; `/stall?seen=NAME` first creates the
///   file `NAME` in the files directory, so a test can wait for "the request reached the
///   server" (``waitForRequest(_:timeoutSeconds:)``)
/// - `/drip` — 200 `image/png`, then one byte every 100 ms
/// - `/files/NAME?ct=TYPE` — a file from the directory given at start, with that Content-Type
/// - `/cat.jpg` — a small JPEG
public final class MediaServer: Sendable {
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The directory `/files/NAME` serves from (and `/stall?seen=` marks in).
    public let filesDirectory: URL
    private let process: TestChild

    /// The process's server, started on first use; nil when python3 cannot start it.
    public static let shared: MediaServer? = try? MediaServer()

    static let script = #"""
import http.server, socketserver, sys, threading, time, os, urllib.parse

FILES = sys.argv[1]
PNG = bytes([0x89,0x50,0x4E,0x47,0x0D,0x0A,0x1A,0x0A,0,0,0,13]) + b"IHDR" + b"\x00" * 200
JPEG = bytes([0xFF,0xD8,0xFF,0xE0,0,16]) + b"JFIF" + b"\x00" * 300
HTML = b"<html><body><h1>Something went wrong</h1></body></html>"

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *args): pass
    def send(self, status, ctype, body, length=True):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length: self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def redirect(self, to):
        self.send_response(302)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        p = url.path
        try:
            if p == "/photo": self.send(200, "image/png", PNG)
            elif p == "/cat.jpg": self.send(200, "image/jpeg", JPEG)
            elif p == "/redirect": self.redirect("/photo")
            elif p == "/to": self.redirect(urllib.parse.parse_qs(url.query)["u"][0])
            elif p.startswith("/hop/"):
                n = int(p[5:])
                if n >= 9: self.send(200, "image/png", PNG)
                else: self.redirect("/hop/%d" % (n + 1))
            elif p == "/error-page": self.send(200, "text/html; charset=utf-8", HTML)
            elif p == "/lying-png": self.send(200, "image/png", HTML)
            elif p == "/missing": self.send(404, "text/html", HTML)
            elif p in ("/huge.jpg", "/huge-length.jpg"):
                total = 30 * 1000 * 1000
                self.send_response(200)
                self.send_header("Content-Type", "image/jpeg")
                if p == "/huge-length.jpg": self.send_header("Content-Length", str(total))
                self.end_headers()
                self.wfile.write(JPEG[:16])
                chunk = b"\x00" * 65536
                sent = 16
                while sent < total:
                    n = min(len(chunk), total - sent)
                    self.wfile.write(chunk[:n])
                    sent += n
            elif p == "/stall":
                seen = urllib.parse.parse_qs(url.query).get("seen")
                if seen:
                    open(os.path.join(FILES, os.path.basename(seen[0])), "wb").close()
                time.sleep(120)
            elif p == "/drip":
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.end_headers()
                for b in PNG:
                    self.wfile.write(bytes([b])); self.wfile.flush(); time.sleep(0.1)
            elif p.startswith("/files/"):
                name = os.path.basename(p[7:])
                ctype = urllib.parse.parse_qs(url.query).get("ct", ["application/octet-stream"])[0]
                with open(os.path.join(FILES, name), "rb") as f: body = f.read()
                self.send(200, ctype, body)
            else:
                self.send(404, "text/plain", b"no route")
        except (BrokenPipeError, ConnectionResetError):
            pass

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
threading.Thread(target=server.serve_forever, daemon=True).start()
sys.stdin.read()
os._exit(0)
"""#

    init() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pushseal-media-server-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let scriptURL = dir.appendingPathComponent("media_server.py")
        try Data(Self.script.utf8).write(to: scriptURL)
        let files = dir.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        // Its standard input stays open for the life of the test process (the server's lifetime).
        let process = try TestChild(["/usr/bin/env", "python3", scriptURL.path, files.path], stdinPipe: true, stderr: .descriptor(2))
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let chunk = process.readOutput()
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            process.signal(SIGTERM)
            throw CocoaError(.fileReadCorruptFile)
        }
        self.port = port
        self.filesDirectory = files
        self.process = process
    }

    /// `http://127.0.0.1:PORT<path>`.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// A fresh `/stall` URL that marks its arrival: ``waitForRequest(_:timeoutSeconds:)`` with
    /// the returned name returns once the server has read the request.
    public func markedStallURL() -> (url: String, name: String) {
        let name = "seen-\(UUID().uuidString)"
        return (url("/stall?seen=\(name)"), name)
    }

    /// Waits for the event "the server has read the request of ``markedStallURL()``'s `name`"
    /// (its marker file appears), checking every 10 ms.
    /// - Parameter timeoutSeconds: how long at most (a failure, not a verdict).
    /// - Returns: true once the request arrived, false on timeout.
    public func waitForRequest(_ name: String, timeoutSeconds: Double = 20) -> Bool {
        let marker = filesDirectory.appendingPathComponent(name).path
        let deadline = ContinuousClock.now + .milliseconds(Int(timeoutSeconds * 1000))
        while !FileManager.default.fileExists(atPath: marker) {
            if ContinuousClock.now >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }
}
