// PushSealMediaFetch: the network half of the extension's media download, in its own dynamic
// library (libPushSealMediaFetch.so) so that push-open links neither FoundationNetworking nor
// libcurl and its ~30 libraries at startup. PushSealExtension loads it with dlopen only when a
// notification has media (`DynamicMediaFetcher`), in the same process, so the download's
// memory counts as it would on iOS.
//
// The boundary is a C ABI (no Swift types cross it): the library may carry its own copies of
// whatever it links, and a Swift protocol or type would not be the same type on both sides.
// The caller's policy (App Transport Security, size limits, sniffing, hashing, writing the file)
// stays in PushSealExtension and runs inside the callbacks below.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The ABI version of the entry points below (1); the loader refuses any other.
@_cdecl("pushseal_media_fetch_abi_version")
public func pushsealMediaFetchABIVersion() -> Int32 { 1 }

/// A redirect is about to be followed to the NUL-terminated URL: return 1 to follow, 0 to stop
/// (the task then completes without following it).
public typealias PushSealFetchRedirect = @convention(c) (UnsafeMutableRawPointer, UnsafePointer<CChar>) -> Int32
/// The response head: HTTP status, `Content-Type` (NUL-terminated, or nil), `Content-Length`
/// in bytes (-1 if absent or not a number). Return 1 to receive the body, 0 to cancel.
public typealias PushSealFetchResponse = @convention(c) (UnsafeMutableRawPointer, Int32, UnsafePointer<CChar>?, Int64) -> Int32
/// A body chunk (pointer, byte count). Return 1 to go on, 0 to stop: the library then cancels
/// the task from another queue.
public typealias PushSealFetchData = @convention(c) (UnsafeMutableRawPointer, UnsafeRawPointer?, Int) -> Int32
/// Completion, exactly once: kind 0 finished, 1 timed out, 2 cancelled, 3 other failure (with
/// the URL error code), then the final HTTP status (0 if none).
public typealias PushSealFetchComplete = @convention(c) (UnsafeMutableRawPointer, Int32, Int64, Int32) -> Void
/// The library will make no more calls with this context: the caller may free it.
public typealias PushSealFetchRelease = @convention(c) (UnsafeMutableRawPointer) -> Void

/// Starts a GET of the NUL-terminated `url` with one timeout for the whole request in seconds,
/// no cache, no cookies, `Accept-Encoding: identity`, and a delegate queue that holds at most
/// `maxPendingCallbacks` callbacks (backpressure: the body never piles up in memory).
/// - Returns: a handle for `pushseal_media_fetch_cancel` and `pushseal_media_fetch_finish`,
///   or nil when `url` does not parse (no callback is then made, release included).
@_cdecl("pushseal_media_fetch_start")
public func pushsealMediaFetchStart(_ url: UnsafePointer<CChar>, _ timeoutSeconds: Double, _ maxPendingCallbacks: Int,
                                    _ context: UnsafeMutableRawPointer,
                                    _ redirect: PushSealFetchRedirect, _ response: PushSealFetchResponse,
                                    _ data: PushSealFetchData, _ complete: PushSealFetchComplete,
                                    _ release: PushSealFetchRelease) -> UnsafeMutableRawPointer? {
    guard let url = URL(string: String(cString: url)) else { return nil }
    let callbacks = Callbacks(context: context, redirect: redirect, response: response, data: data, complete: complete, release: release)
    let delegate = FetchDelegate(callbacks: callbacks)
    let configuration = URLSessionConfiguration.ephemeral
    configuration.timeoutIntervalForRequest = timeoutSeconds
    configuration.timeoutIntervalForResource = timeoutSeconds
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    configuration.urlCache = nil
    configuration.httpShouldSetCookies = false
    let queue = BoundedDelegateQueue(maxPendingOperationCount: maxPendingCallbacks)
    let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeoutSeconds)
    request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
    let task = session.dataTask(with: request)
    let fetch = Fetch(session: session, task: task)
    delegate.fetch = fetch
    task.resume()
    return Unmanaged.passRetained(fetch).toOpaque()
}

/// Cancels the transfer (once; later calls do nothing). Never waits for the network side.
@_cdecl("pushseal_media_fetch_cancel")
public func pushsealMediaFetchCancel(_ handle: UnsafeMutableRawPointer) {
    Unmanaged<Fetch>.fromOpaque(handle).takeUnretainedValue().cancel()
}

/// Ends the caller's use of the handle: the session finishes and is invalidated; the release
/// callback follows once URLSession lets go of the delegate.
@_cdecl("pushseal_media_fetch_finish")
public func pushsealMediaFetchFinish(_ handle: UnsafeMutableRawPointer) {
    let fetch = Unmanaged<Fetch>.fromOpaque(handle).takeRetainedValue()
    fetch.session.finishTasksAndInvalidate()
}

/// The caller's context and callbacks. Sendable: a raw pointer the caller keeps valid until
/// `release`, plus C function pointers.
struct Callbacks: @unchecked Sendable {
    let context: UnsafeMutableRawPointer
    let redirect: PushSealFetchRedirect
    let response: PushSealFetchResponse
    let data: PushSealFetchData
    let complete: PushSealFetchComplete
    let release: PushSealFetchRelease
}

/// One session and its task.
///
/// `@unchecked Sendable`: `session` and `task` are immutable and thread-safe; `cancelled` is
/// only touched under `lock`.
final class Fetch: @unchecked Sendable {
    let session: URLSession
    let task: URLSessionDataTask
    private let lock = NSLock()
    private var cancelled = false

    init(session: URLSession, task: URLSessionDataTask) {
        self.session = session
        self.task = task
    }

    /// Cancels the task once, from a global queue: `URLSessionTask.cancel()` waits for the
    /// session's work queue, which may be waiting for the (bounded) delegate queue, so it must
    /// not run on the delegate queue.
    func cancel() {
        lock.lock()
        let first = !cancelled
        cancelled = true
        lock.unlock()
        guard first else { return }
        let task = self.task
        DispatchQueue.global().async { task.cancel() }
    }
}

/// URLSession delegate forwarding to the C callbacks.
///
/// Lesson from FoundationNetworking on Linux: cancelling a task from inside a delegate callback
/// before that callback's completion handler ran traps ("Received callback for HTTP
/// redirection, but we're not waiting for it"): callbacks answer through their completion
/// handler (`nil` / `.cancel`); only the data callback cancels, through `Fetch.cancel()`.
///
/// `@unchecked Sendable`: `fetch` is set once before the task resumes, then only read.
final class FetchDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    let callbacks: Callbacks
    var fetch: Fetch?

    init(callbacks: Callbacks) { self.callbacks = callbacks }

    // URLSession keeps its delegate until the session is invalidated: after that no callback
    // can come, so the caller's context may go.
    deinit { callbacks.release(callbacks.context) }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        let follow = request.url.map { url in url.absoluteString.withCString { callbacks.redirect(callbacks.context, $0) } } ?? 0
        completionHandler(follow == 1 ? request : nil)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let http = response as? HTTPURLResponse
        let status = Int32(clamping: http?.statusCode ?? 0)
        let length = http?.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) } ?? -1
        let allow: Int32
        if let type = http?.value(forHTTPHeaderField: "Content-Type") {
            allow = type.withCString { callbacks.response(callbacks.context, status, $0, length) }
        } else {
            allow = callbacks.response(callbacks.context, status, nil, length)
        }
        completionHandler(allow == 1 ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let goOn = data.withUnsafeBytes { callbacks.data(callbacks.context, $0.baseAddress, $0.count) }
        if goOn != 1 { fetch?.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let status = Int32(clamping: (task.response as? HTTPURLResponse)?.statusCode ?? 0)
        guard let error else {
            callbacks.complete(callbacks.context, 0, 0, status)
            return
        }
        let nsError = error as NSError
        let kind: Int32
        if nsError.domain == NSURLErrorDomain, nsError.code == NSURLErrorTimedOut {
            kind = 1
        } else if nsError.domain == NSURLErrorDomain, nsError.code == NSURLErrorCancelled {
            kind = 2
        } else {
            kind = 3
        }
        callbacks.complete(callbacks.context, kind, Int64(nsError.code), status)
    }
}

/// A serial delegate queue for URLSession that applies backpressure.
///
/// FoundationNetworking on Linux hands every received chunk to the delegate queue with
/// `addOperation(_:)` from the session's work queue, which also drives libcurl. A plain
/// `OperationQueue` queues them without bound, so on a fast link a 9 MB body sits in memory
/// while the delegate catches up. Here `addOperation(_:)` waits while `maxPendingOperationCount`
/// operations are pending: the work queue, and with it libcurl and TCP, slows down to the pace
/// of the delegate. Calls from the queue's own operations never wait (no self-deadlock), and a
/// wait gives up after ``maxWaitSeconds`` (queueing then proceeds unbounded rather than hang).
///
/// `@unchecked Sendable`: `OperationQueue` is thread-safe; the only added state is a semaphore.
final class BoundedDelegateQueue: OperationQueue, @unchecked Sendable {
    /// Longest a producer waits for a free slot (5 s).
    static let maxWaitSeconds = 5.0
    private let slots: DispatchSemaphore

    /// Creates a serial queue allowing `maxPendingOperationCount` pending operations.
    init(maxPendingOperationCount: Int) {
        slots = DispatchSemaphore(value: max(1, maxPendingOperationCount))
        super.init()
        maxConcurrentOperationCount = 1
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        let counted = OperationQueue.current !== self
            && slots.wait(timeout: .now() + .nanoseconds(Int(Self.maxWaitSeconds * 1e9))) == .success
        let slots = self.slots
        super.addOperation {
            block()
            if counted { slots.signal() }
        }
    }
}
