#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealSystem

/// How a fetch ended, as the network side reports it.
public enum MediaFetchCompletion: Sendable, Hashable {
    /// The response completed; the final HTTP status (0 if unknown).
    case finished(status: Int)
    /// The request's timeout passed.
    case timedOut
    /// The request was cancelled (by ``MediaFetchTask/cancel()`` or a refused callback).
    case cancelled
    /// Any other failure, with the URL error code (e.g. -1004 cannot connect).
    case failed(code: Int)
}

/// What the network side tells the downloader, from its own threads, in order: zero or more
/// ``redirect(to:)``, one ``response(status:contentType:contentLength:)``, body chunks, and
/// exactly one ``complete(_:)``; ``connect(to:port:)`` before every socket it opens.
public protocol MediaFetchEvents: AnyObject, Sendable {
    /// A connection is about to be opened to `address` (4 or 16 bytes, network order, after
    /// name resolution) on TCP `port`: true connects, false refuses (no socket is opened).
    func connect(to address: [UInt8], port: Int) -> Bool
    /// A redirect to `url` (absolute): true follows it.
    func redirect(to url: String) -> Bool
    /// The response head: HTTP status, `Content-Type`, `Content-Length` in bytes. True receives the body.
    func response(status: Int, contentType: String?, contentLength: Int?) -> Bool
    /// A body chunk. False stops the transfer (the fetcher cancels it).
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The end, exactly once.
    func complete(_ completion: MediaFetchCompletion)
}

/// A running fetch.
public protocol MediaFetchTask: Sendable {
    /// Cancels the transfer; never waits for the network side. ``MediaFetchEvents/complete(_:)``
    /// follows with `.cancelled` (unless it came already).
    func cancel()
    /// Ends the caller's use: resources are released once the network side is done.
    func finish()
}

/// The network side of a media download: one GET, streamed to ``MediaFetchEvents``.
public protocol MediaFetching: Sendable {
    /// Starts a GET of `url` (http or https; the caller checked its policy) with one timeout
    /// for the whole request in seconds, no cache, no cookies, `Accept-Encoding: identity`,
    /// and at most `maxPendingCallbacks` callbacks queued (backpressure). Every connection,
    /// on every hop, is first offered to ``MediaFetchEvents/connect(to:port:)``.
    /// - Throws: `ExtensionError` `.mediaFetcherUnavailable` when the network side cannot be
    ///   loaded; `.mediaURLRefused` when `url` does not parse.
    func start(url: String, timeoutSeconds: Double, maxPendingCallbacks: Int,
               events: any MediaFetchEvents) throws -> any MediaFetchTask
}

/// The libcurl-based fetcher in `libPushSealMediaFetch.so` (libcurl's C API, no Foundation),
/// loaded with `dlopen` on the first download (never at startup: libcurl pulls in about 30
/// libraries, ~5 MiB of RSS that a notification without media never needs).
///
/// The library is looked for in the directory of the running executable (`/proc/self/exe`:
/// `.build/<config>/` for push-open and the test bundle); debug builds only (`#if DEBUG`) first
/// try the path in the environment variable `PUSHSEAL_MEDIA_FETCH_LIBRARY`, a test hook that a
/// release build never reads. It runs in this process, so the download's memory
/// counts where it would on iOS. The boundary is a C ABI (`pushseal_media_fetch_*`, version 2).
public struct DynamicMediaFetcher: MediaFetching {
    /// The library's file name: `libPushSealMediaFetch.so` (`.dylib` on Darwin).
    public static let libraryFileName: String = {
        #if canImport(Darwin)
        "libPushSealMediaFetch.dylib"
        #else
        "libPushSealMediaFetch.so"
        #endif
    }()

    /// Creates a fetcher; the library is loaded (once per process) by the first ``start``.
    public init() {}

    /// Loads the library if needed and starts the fetch.
    /// - Throws: `ExtensionError` `.mediaFetcherUnavailable` (library missing, not loadable,
    ///   or of another ABI version), `.mediaURLRefused` (the URL does not parse).
    public func start(url: String, timeoutSeconds: Double, maxPendingCallbacks: Int,
                      events: any MediaFetchEvents) throws -> any MediaFetchTask {
        let symbols = try FetchLibrary.shared.get()
        let context = Unmanaged.passRetained(EventsBox(events)).toOpaque()
        let handle = url.withCString { u in
            symbols.start(u, timeoutSeconds, maxPendingCallbacks, context,
                          { ctx, url in Unmanaged<EventsBox>.fromOpaque(ctx).takeUnretainedValue().events.redirect(to: String(cString: url)) ? 1 : 0 },
                          { ctx, status, type, length in
                              Unmanaged<EventsBox>.fromOpaque(ctx).takeUnretainedValue().events.response(
                                  status: Int(status), contentType: type.map { String(cString: $0) },
                                  contentLength: length < 0 ? nil : Int(length)) ? 1 : 0 },
                          { ctx, bytes, count in
                              Unmanaged<EventsBox>.fromOpaque(ctx).takeUnretainedValue().events.receive(
                                  UnsafeRawBufferPointer(start: bytes, count: count)) ? 1 : 0 },
                          { ctx, kind, code, status in
                              let completion: MediaFetchCompletion = switch kind {
                              case 0: .finished(status: Int(status))
                              case 1: .timedOut
                              case 2: .cancelled
                              default: .failed(code: Int(code))
                              }
                              Unmanaged<EventsBox>.fromOpaque(ctx).takeUnretainedValue().events.complete(completion) },
                          { ctx, _, bytes, count, port in
                              Unmanaged<EventsBox>.fromOpaque(ctx).takeUnretainedValue().events.connect(
                                  to: Array(UnsafeBufferPointer(start: bytes, count: count)), port: Int(port)) ? 1 : 0 },
                          { ctx in Unmanaged<EventsBox>.fromOpaque(ctx).release() })
        }
        guard let handle else {
            Unmanaged<EventsBox>.fromOpaque(context).release()
            throw ExtensionError(.mediaURLRefused, "media URL does not parse")
        }
        return LoadedFetchTask(handle: handle, symbols: symbols)
    }
}

/// Keeps the events object alive while the library holds its context pointer.
private final class EventsBox {
    let events: any MediaFetchEvents
    init(_ events: any MediaFetchEvents) { self.events = events }
}

/// A fetch running in the loaded library.
///
/// `@unchecked Sendable`: the handle is an opaque pointer the library's entry points accept from
/// any thread; `finish()` is called once by the downloader, after which no `cancel()` comes.
private final class LoadedFetchTask: MediaFetchTask, @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    let symbols: FetchLibrary.Symbols
    init(handle: UnsafeMutableRawPointer, symbols: FetchLibrary.Symbols) {
        self.handle = handle
        self.symbols = symbols
    }
    func cancel() { symbols.cancel(handle) }
    func finish() { symbols.finish(handle) }
}

/// The library's entry points, resolved once per process.
enum FetchLibrary {
    typealias Redirect = @convention(c) (UnsafeMutableRawPointer, UnsafePointer<CChar>) -> Int32
    typealias Response = @convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<CChar>?, Int64) -> Int32
    typealias DataChunk = @convention(c) (UnsafeMutableRawPointer, UnsafeRawPointer?, Int) -> Int32
    typealias Complete = @convention(c) (UnsafeMutableRawPointer, Int32, Int64, Int32) -> Void
    typealias Connect = @convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<UInt8>, Int, Int32) -> Int32
    typealias Release = @convention(c) (UnsafeMutableRawPointer) -> Void
    typealias Start = @convention(c) (UnsafePointer<CChar>, Double, Int, UnsafeMutableRawPointer,
                                      Redirect, Response, DataChunk, Complete, Connect, Release) -> UnsafeMutableRawPointer?
    typealias Handle = @convention(c) (UnsafeMutableRawPointer) -> Void
    typealias Version = @convention(c) () -> Int32

    /// `@unchecked Sendable`: C function pointers into a library that is never unloaded.
    struct Symbols: @unchecked Sendable {
        let start: Start
        let cancel: Handle
        let finish: Handle
    }

    /// Loaded on first use (Swift initializes a static `let` once, thread-safely).
    static let shared: Result<Symbols, ExtensionError> = load()

    /// Where the library is looked for, in order.
    static func candidatePaths() -> [String] {
        var paths: [String] = []
        #if DEBUG
        // Test hook: a release binary loads only the library next to itself.
        if let override = Environment.value("PUSHSEAL_MEDIA_FETCH_LIBRARY") {
            paths.append(override)
        }
        #endif
        if let dir = Environment.executableDirectory() { paths.append(dir + "/" + DynamicMediaFetcher.libraryFileName) }
        return paths
    }

    static func load() -> Result<Symbols, ExtensionError> {
        let paths = candidatePaths()
        var lastError = "not found"
        for path in paths {
            let lib: DynamicLibrary
            do {
                lib = try DynamicLibrary(path: path)
            } catch let e as SystemError {
                if e.code != .notFound { lastError = e.reason }
                continue
            } catch {
                continue
            }
            guard let v = lib.symbol(named: "pushseal_media_fetch_abi_version"),
                  unsafeBitCast(v, to: Version.self)() == 2,
                  let start = lib.symbol(named: "pushseal_media_fetch_start"),
                  let cancel = lib.symbol(named: "pushseal_media_fetch_cancel"),
                  let finish = lib.symbol(named: "pushseal_media_fetch_finish") else {
                lastError = "\(path) is not ABI version 2 of the media fetcher"
                continue
            }
            return .success(Symbols(start: unsafeBitCast(start, to: Start.self), cancel: unsafeBitCast(cancel, to: Handle.self),
                                    finish: unsafeBitCast(finish, to: Handle.self)))
        }
        return .failure(ExtensionError(.mediaFetcherUnavailable,
                                       "the media fetcher library \(DynamicMediaFetcher.libraryFileName) cannot be loaded (\(lastError)); looked in: \(paths.joined(separator: ", "))"))
    }
}
