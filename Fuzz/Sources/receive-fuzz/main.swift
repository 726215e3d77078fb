// receive-fuzz: libFuzzer on the receive path, payload bytes → displayed content.
//
// Each input is an APNs payload as delivered: JSONReader → Eligibility → (if eligible) a
// fresh DecryptingServiceExtension with the real wire-format opener and a fixed test key
// (the 32 bytes 0x00…0x1f under key id `k1`, app id `com.example.app`, as in
// shared/cases) → the content it delivers. It traps only when an invariant breaks:
//   - an eligible payload gets exactly one content-handler call;
//   - the delivered text is not blank (unless the alert shows only loc-keys);
//   - the original outcome shows the alert exactly as sent, with no attachment;
//   - a decrypted outcome never shows the ciphertext.
//
// libFuzzer's own `main` cannot be used with SwiftPM (it renames the entry point and links
// libFuzzer's main whole-archive), so this file calls `LLVMFuzzerRunDriver` itself.
import Dispatch
import Glibc
import PushSealCrypto
import PushSealExtension
import PushSealWire
import PushSealJSON

@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>,
                         _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

/// The test key, held under `k1` only.
struct FixedKeyProvider: NotificationKeyProvider {
    let key = SecretBytes(copying: Array(0..<32))
    struct Missing: Error, CustomStringConvertible { let description = "errSecItemNotFound (-25300)" }
    func key(for keyID: String) throws -> SecretBytes {
        guard keyID == "k1" else { throw Missing() }
        return key
    }
}

let configuration = DecryptingServiceConfiguration(appID: "com.example.app", keyProvider: FixedKeyProvider(),
                                                   locale: "pt-BR", replayCapacity: 0,  // no App Group: keep the stages after the replay check reachable
                                                   now: { 1_800_000_000 })

/// Stops the run with a message libFuzzer shows next to the crashing input.
func violated(_ message: String) -> Never {
    var text = Array("receive-fuzz: invariant violated: \(message)\n".utf8)
    _ = text.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}

func alertUsesLocKeys(_ payload: JSONValue) -> Bool {
    guard case .object(let alert)? = payload["aps"]?["alert"] else { return false }
    return ["loc-key", "title-loc-key", "subtitle-loc-key"].contains { !(alert[$0]?.stringValue ?? "").isEmpty }
}

/// Collects the content-handler calls of one run (the extension delivers synchronously here:
/// no App Group container, so no media download).
final class LockedBox: @unchecked Sendable {
    // @unchecked Sendable: `items` is only touched under `lock`.
    private let lock = NSLockLike()
    private var items: [(UNNotificationContent, NotificationOutcome)] = []
    func append(_ item: (UNNotificationContent, NotificationOutcome)) { lock.locked { items.append(item) } }
    var all: [(UNNotificationContent, NotificationOutcome)] { lock.locked { items } }
}

/// A pthread mutex (Foundation-free).
final class NSLockLike: @unchecked Sendable {
    // @unchecked Sendable: a pthread mutex is made for use from several threads.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    func locked<T>(_ body: () -> T) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let payload = try? JSONReader.parse(bytes) else { return 0 }
    guard Eligibility(payload: payload) == .eligible else { return 0 }

    let request = UNNotificationRequest(identifier: "fuzz", apnsPayload: payload)
    let context = ExtensionContext(logger: NullLogger(), budgetSeconds: 30, expiry: .distantFuture, deadline: .distantFuture)
    let instance = DecryptingServiceExtension(configuration: configuration, context: context)
    let deliveries = LockedBox()
    let handler = ContentHandler { content, outcome, _ in
        deliveries.append((content, outcome))
        return true
    }
    instance.didReceive(request, withContentHandler: handler)

    let calls = deliveries.all
    guard calls.count == 1, let (content, outcome) = calls.first else { violated("\(calls.count) content-handler calls, not exactly one") }
    if content.isBlank && !alertUsesLocKeys(payload) { violated("blank notification delivered (outcome \(outcome.rawValue))") }
    switch outcome {
    case .original:
        let sent = request.content
        guard content.title == sent.title, content.subtitle == sent.subtitle, content.body == sent.body, content.attachments.isEmpty else {
            violated("original outcome, but the content differs from the alert as sent")
        }
    case .decrypted, .decryptedWithoutMedia:
        if let box = payload["encrypted_data"]?.stringValue, box.utf8.count >= 16,
           content.title.contains(box) || content.subtitle.contains(box) || content.body.contains(box) {
            violated("the ciphertext is shown")
        }
    default:
        violated("unexpected outcome \(outcome.rawValue) from the extension")
    }
    return 0
}

var argc = CommandLine.argc
var argv = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOne))
