internal import CNghttp2Hooks
import PushSealSystem

/// How the HTTP/2 stream of each APNs transfer last closed, from nghttp2 itself (the
/// stream-close hook of CNghttp2Hooks, called inside `curl_multi_perform` before libcurl acts):
/// the structured signal that a stream was refused (`REFUSED_STREAM`, RFC 9113 §8.7: not
/// processed; nghttp2 gives the streams above a GOAWAY's last stream id the same code). A
/// connection that dies with a request on it closes no stream (nghttp2 frees them), so no code
/// is recorded and the request counts as one that may have reached APNs.
///
/// Keyed by easy handle (libcurl 7.88's stream user data); only registered handles are
/// recorded (another libcurl user in the process is ignored).
enum APNsStreamCloses {
    /// Easy handle address → the last close code since ``clear(_:)``, or `nil` for none.
    private static let codes = Locked<[UInt: UInt32?]>([:])

    /// Installs the hook (once per process).
    private static let installed: Bool = {
        pushseal_h2_set_stream_closed_hook { data, code in
            guard let data else { return }
            let key = UInt(bitPattern: data)
            APNsStreamCloses.codes.withLock { codes in
                if codes[key] != nil { codes[key] = .some(code) }
            }
        }
        return true
    }()

    /// Starts recording for `easy`.
    static func register(_ easy: UnsafeMutableRawPointer) {
        _ = installed
        codes.withLock { $0[UInt(bitPattern: easy)] = .some(nil) }
    }

    /// Stops recording for `easy` (before `curl_easy_cleanup`).
    static func unregister(_ easy: UnsafeMutableRawPointer) {
        _ = codes.withLock { $0.removeValue(forKey: UInt(bitPattern: easy)) }
    }

    /// Forgets what was recorded for `easy` (a new issue of its request).
    static func clear(_ easy: UnsafeMutableRawPointer) {
        codes.withLock { codes in
            let key = UInt(bitPattern: easy)
            if codes[key] != nil { codes[key] = .some(nil) }
        }
    }

    /// Whether the stream of `easy`'s current issue was closed with `REFUSED_STREAM`.
    static func refused(_ easy: UnsafeMutableRawPointer) -> Bool {
        codes.withLock { $0[UInt(bitPattern: easy)] ?? nil } == PUSHSEAL_H2_REFUSED_STREAM
    }

    /// `true` once libcurl's HTTP/2 sessions report their stream closes here (after a connection).
    static var active: Bool { pushseal_h2_hooks_active() != 0 }

    /// RST_STREAM frames for closed streams that were not sent (process-wide).
    static var suppressedResets: Int { Int(pushseal_h2_suppressed_resets()) }
}
