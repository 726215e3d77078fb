// seal-server-example: sealing a notification from a server, by library.
//
// What a server does for every push: open the server keychain once (at start-up), build the
// notification the user should see, seal it for the recipient with the recipient's primary
// key, and hand the sealed payload and its headers to an APNs HTTP/2 client. This program
// prints that request (pseudo-headers, APNs headers, a blank line, the payload) instead of
// sending it: talking HTTP/2 to APNs (TLS, provider token or certificate, retries on 429/5xx,
// dropping device tokens on 410) is out of scope here — use the APNs client you already have.
//
//   swift run seal-server-example --keychain server-kc --app-id com.example.app --recipient alice
//
// The keychain and the recipient's keyset come from `push-keys generate` (see README.md).
// It uses PushSealServer alone (the composition layer the CLIs and the gateway share: open a
// store, make a sealer, import a registration, send through APNsClient; docs/gateway.md).
// Exit codes (as push-seal): 0 ok, 4 seal limit reached (rotate), 64 usage, 66 keychain missing,
// 67 unknown recipient or no usable key, 77 insecure keychain permissions, 1 anything else.
import Foundation
import PushSealServer

func fail(_ message: String, hint: String? = nil, code: Int32) -> Never {
    FileHandle.standardError.write(Data("seal-server-example: error: \(message)\n".utf8))
    if let hint { FileHandle.standardError.write(Data("hint: \(hint)\n".utf8)) }
    exit(code)
}

// MARK: Arguments (kept minimal: a real server reads these from its configuration).

let usage = "seal-server-example --keychain DIR [--app-id APP] [--recipient R] [--device-token HEX] [--register RECORD]"
var keychainPath: String?
var registrationPath: String?
var appID = "com.example.app"
var recipient = "alice"
var deviceToken = "DEVICE_TOKEN"
var rest = CommandLine.arguments.dropFirst()
while let option = rest.popFirst() {
    if option == "--help" || option == "-h" {
        print("usage: \(usage)\nPrints the APNs request (headers, blank line, payload) for one sealed notification.")
        exit(0)
    }
    guard let value = rest.popFirst() else { fail("\(option) needs a value", hint: usage, code: 64) }
    switch option {
    case "--keychain": keychainPath = value
    case "--app-id": appID = value
    case "--recipient": recipient = value
    case "--device-token": deviceToken = value
    case "--register": registrationPath = value
    default: fail("unknown option '\(option)'", hint: usage, code: 64)
    }
}
guard let keychainPath else { fail("missing --keychain DIR", hint: usage, code: 64) }

// MARK: 1. Open the server keychain (once per process; the sealer is Sendable and thread-safe).
// The store's sealing keys read the recipient's keyset at every seal (so a rotation by `push-keys`
// in another process is seen at the next seal) and count the seal against the key's 2^32 limit.
// A PostgreSQL registry is `.registry(connectionString:kekFile:)` instead.

let store: ServerStore
do {
    store = try ServerStore.open(.keychain(path: keychainPath))
} catch let e as SealingKeyError where e.code == .keyStoreMissing {
    fail("no keychain at \(keychainPath)", hint: "push-keys generate --keychain \(keychainPath) --app-id \(appID) --recipient \(recipient)", code: 66)
} catch let e as SealingKeyError where e.code == .keyStoreInsecure {
    fail(e.reason, hint: "chmod 700 the keychain directory", code: 77)
} catch {
    fail("cannot open the keychain at \(keychainPath): \(error)", code: 1)
}

// MARK: 1b. Version 2 (optional): `--register RECORD` imports a device's registration record, as
// the endpoint of your app's API would (Registration.swift), before sealing. A recipient with a
// registration is then sealed v2 (HPKE; auth mode when the app has a sender key, made with
// `push-keys sender generate`), one with a keyset v1: the sealer picks per recipient.

if let registrationPath {
    guard let body = FileManager.default.contents(atPath: registrationPath) else { fail("cannot read \(registrationPath)", code: 66) }
    do {
        switch try importRegistration([UInt8](body), recipient: recipient, appID: appID, into: store) {
        case .registered(let keyID, let replaced):
            FileHandle.standardError.write(Data("registered \(keyID) for \(appID)/\(recipient)\(replaced.map { " (replaces \($0))" } ?? "")\n".utf8))
        case .alreadyRegistered(let keyID):
            FileHandle.standardError.write(Data("already registered \(keyID) for \(appID)/\(recipient)\n".utf8))
        case .refused(let code, let reason):
            fail("registration refused (\(code)): \(reason)", code: 65)
        }
    } catch {
        fail("cannot store the registration: \(error)", code: 1)
    }
}
// Everything in SealOptions travels in clear: the fallback alert (shown if the extension
// cannot open the payload), the `aps` fields passed through, and the APNs headers.
let options = SealOptions(
    fallback: FallbackAlert(title: "New message", body: "Open the app to read it"),
    aps: APSFields(sound: "default", badge: 3, threadID: "conversation-42",
                   interruptionLevel: "time-sensitive", relevanceScore: 0.8),
    priority: 10,
    collapseID: "conversation-42"
)
let sealer: NotificationSealer
do {
    // v2 for a recipient with a registration, v1 for one with a keyset (SealFormatPolicy.automatic).
    sealer = try store.sealer(SealerConfiguration(appID: appID, options: options))
} catch let e as SenderError {
    fail("\(e)", code: 64)
} catch {
    fail("cannot read the app's sender key: \(error)", code: 1)
}

// MARK: 2. Build the notification. All of it is sealed: APNs sees none of it.

let notification = SealRequest(
    PushNotification(
        title: "Ana",
        subtitle: "Dinner on Friday",
        body: "Table for four at 8 — shall I book it? 🍝",
        data: ["conversationID": .string("conversation-42"), "messageID": .integer(1234)],
        id: "message-1234"
    ),
    ttlSeconds: 3600  // becomes the sealed `exp` and the `apns-expiration` header
)

// MARK: 3. Seal it for the recipient with the recipient's primary key.

let sealed: SealedNotification
do {
    sealed = try sealer.seal(notification, for: recipient)
} catch let e as SenderError where e.code == .unknownRecipient {
    fail("no keyset or registration for \(appID)/\(recipient) in \(keychainPath)", hint: "push-keys generate --keychain \(keychainPath) --app-id \(appID) --recipient \(recipient)", code: 67)
} catch let e as SenderError where e.code == .keyUnavailable {
    fail(e.reason, hint: "push-keys rotate --keychain \(keychainPath) --app-id \(appID) --recipient \(recipient)", code: 67)
} catch let e as SenderError where e.code == .sealLimitReached {
    fail(e.reason, hint: "push-keys rotate --keychain \(keychainPath) --app-id \(appID) --recipient \(recipient)", code: 4)
} catch {
    fail("\(error)", code: 1)
}

// MARK: 4. The APNs request: POST /3/device/<token> with these headers and this body.
// (Add `authorization: bearer <provider token>` when you use token-based authentication.)

var request = ":method: POST\n:path: /3/device/\(deviceToken)\n"
for field in sealed.headers.fields {
    request += "\(field.name): \(field.value)\n"
}
request += "content-length: \(sealed.payload.count)\n\n"
FileHandle.standardOutput.write(Data(request.utf8))
FileHandle.standardOutput.write(Data(sealed.payload + [UInt8(ascii: "\n")]))
FileHandle.standardError.write(Data("sealed for \(appID)/\(recipient) with key \(sealed.keyID): \(sealed.payload.count) bytes of \(SealOptions.maxPayloadByteCount)\n".utf8))
