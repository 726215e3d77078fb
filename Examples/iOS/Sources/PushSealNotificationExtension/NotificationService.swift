// PushSeal reference Notification Service Extension for a real iPhone (iOS 17+).
//
// Opens PushSeal wire format v1 (AES-256-GCM) and v2 (HPKE, base and auth mode) of
// docs/FORMAT.md with Apple's frameworks only: CryptoKit (AES-256-GCM, HPKE, X25519, SHA-256),
// Security (the key items of docs/keychain.md, read by PushSealDeviceKeys.swift) and
// UserNotifications. The module (and product) PushSealNotificationExtension, over PushSealDevice;
// the extension target subclasses `NotificationService` in one line (README.md). `receive` is the
// one opener of the extension and of the app's retract handler (PushSealRetract.swift, FORMAT.md §5.1).
// Checked on Linux by LinuxCheck/check.sh; Tests/PushSealWireTests/IOSExampleDriftTests.swift checks its
// field names, algorithms, AAD and info strings, error codes, plaintext members, keychain layout
// and the presence of the zero-shared-secret check and the replay guard against FORMAT.md,
// keychain.md, the Python reference and the PushSealWire constants.
//
// Fallback ladder (DESIGN.md "What falls back means"): decrypted with media → decrypted without
// media → the original content as delivered. Both versions go through the same ladder. The
// content handler is called exactly once; the user never sees error text, ciphertext or a
// blank notification.
import CryptoKit
import Foundation
import os
@_exported import PushSealDevice
import Security
@preconcurrency import UserNotifications

/// Configuration of the extension (Info.plist-snippet.xml), never read from the payload.
enum PushSealConfig {
    /// Info.plist keys of the extension. The keychain access group key is
    /// `PushSealDeviceKeys.accessGroupInfoKey`.
    static let appIDInfoKey = "PushSealAppID"
    static let appGroupInfoKey = "PushSealAppGroup"
    /// The `userInfo` key under which the sealed `data` object is delivered to the app (F3):
    /// the `pushseal` member. Nothing else that was not sealed reaches `userInfo` except `aps`.
    static let sealedDataUserInfoKey = "pushseal"
    /// The `userInfo` key under which a decrypted notification carries its sealed `id`: what the
    /// app's retract handler (AppDelegate.swift) finds delivered notifications by.
    public static let sealedIDUserInfoKey = "pushseal-id"
    /// iOS gives an extension about 30 s; keep a margin for the expiry path.
    static let budgetSeconds: TimeInterval = 30
    static let safetyMarginSeconds: TimeInterval = 4
    /// Largest media file accepted (iOS image attachment limit, 10 MB).
    static let maxMediaByteCount = 10_000_000

    /// The App Group container (shared with the app), or `nil` when not configured.
    static func appGroupDirectory() -> URL? {
        guard let group = Bundle.main.object(forInfoDictionaryKey: appGroupInfoKey) as? String else { return nil }
        return FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)
    }
}

/// Why opening stopped: a stable code of FORMAT.md §8 / §V.8, the key codes of docs/keychain.md (`corruptKey`, `keyExpired`, `keyDisabled`, `keys:keyRetired`),
/// `keychain:<OSStatus>`, `expired`, or a replay guard outcome. Only the code is ever logged.
public struct Refusal: Error {
    public let code: String
    init(_ code: String) { self.code = code }
}

/// The decrypting Notification Service Extension. Open, so the extension target names its own
/// one-line subclass as NSExtensionPrincipalClass (`$(PRODUCT_MODULE_NAME).NotificationService`):
/// `final class NotificationService: PushSealNotificationExtension.NotificationService, @unchecked Sendable {}`.
///
/// `@unchecked Sendable`: URLSession's completion handler needs `self`; every mutable stored
/// property is read and written only under `lock`.
open class NotificationService: UNNotificationServiceExtension, @unchecked Sendable {
    private let log = Logger(subsystem: "pushseal", category: "extension")
    private let lock = NSLock()
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var originalContent: UNNotificationContent?
    private var bestAttemptContent: UNMutableNotificationContent?
    private var delivered = false
    private var task: URLSessionTask?

    open override func didReceive(_ request: UNNotificationRequest,
                             withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        let deadline = Date().addingTimeInterval(PushSealConfig.budgetSeconds - PushSealConfig.safetyMarginSeconds)
        lock.withLock {
            self.contentHandler = contentHandler
            self.originalContent = request.content
        }
        // Stage 1 (critical): open the box, check time and replay. Any failure → original content.
        let now = Int64(Date().timeIntervalSince1970)
        let plaintext: Plaintext
        do {
            let appID = Bundle.main.object(forInfoDictionaryKey: PushSealConfig.appIDInfoKey) as? String
            plaintext = try Self.receive(request.content.userInfo, appID: appID, now: now, expecting: .display)
        } catch let refusal as Refusal {
            log.error("stage=open event=fallback code=\(refusal.code, privacy: .public)")
            return deliver()
        } catch {
            log.error("stage=open event=fallback code=unexpected")
            return deliver()
        }
        log.info("stage=open event=ok")

        guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else { return deliver() }
        let text = plaintext.localized(for: Locale.preferredLanguages)
        content.title = text.title ?? ""
        content.subtitle = text.subtitle ?? ""
        content.body = text.body ?? ""
        // Nothing readable (empty or white space only): the original alert, never a blank notification.
        guard ![content.title, content.subtitle, content.body].allSatisfy({ $0.allSatisfy(\.isWhitespace) }) else { return deliver() }
        Self.applyPresentation(plaintext.aps, delivered: request.content.userInfo["aps"] as? [String: Any], to: content)
        content.userInfo = Self.sealedUserInfo(plaintext, delivered: request.content.userInfo)
        lock.withLock { bestAttemptContent = content }  // the expiry path now shows decrypted text

        // Stage 2 (optional): media. Failure keeps the decrypted text without an attachment.
        guard let media = plaintext.media else { return deliver() }
        download(media, deadline: deadline)
    }

    open override func serviceExtensionTimeWillExpire() {
        log.info("stage=expire event=deliverBestAttempt")
        deliver()
    }

    /// Calls the content handler once: the best attempt content, else the original content.
    private func deliver() {
        let (handler, content, pending) = lock.withLock { () -> (((UNNotificationContent) -> Void)?, UNNotificationContent?, URLSessionTask?) in
            guard !delivered else { return (nil, nil, nil) }
            delivered = true
            defer { contentHandler = nil; task = nil }
            return (contentHandler, bestAttemptContent ?? originalContent, task)
        }
        pending?.cancel()
        if let handler, let content { handler(content) }
    }

    // MARK: Stage 1: open and check (the extension and the app's retract handler alike)

    /// Opens a payload and checks it as every PushSeal receiver does, in order: the fields and
    /// the box (``open(_:appID:now:)``), the message kind (FORMAT.md §5.1: the extension takes
    /// only `display`, the app's background handler only `retract`; checked before the replay
    /// guard, so a message sent down the wrong path does not use up its id), `exp` (only after
    /// authentication), then the replay guard (security review F2: bounded by time, fails closed).
    public static func receive(_ userInfo: [AnyHashable: Any], appID: String?, now: Int64, expecting kind: Plaintext.Kind) throws -> Plaintext {
        let plaintext = try open(userInfo, appID: appID, now: now)
        guard plaintext.kind == kind else { throw Refusal("wrongKind:\(plaintext.kind.rawValue)") }
        if let exp = plaintext.exp, now >= exp { throw Refusal("expired") }
        let verdict = PushSealReplayGuard(directory: PushSealConfig.appGroupDirectory())
            .checkAndRecord(id: plaintext.id, iat: plaintext.iat, exp: plaintext.exp, now: now)
        if let code = verdict.refusalCode { throw Refusal(code) }
        return plaintext
    }

    // MARK: Stage 1: read the fields (FORMAT.md §3 and §V.3, one order for both versions)

    /// A payload field: `missingField` when absent, `wrongFieldType` when not a JSON string.
    private static func string(_ value: Any?) throws -> String {
        guard let value else { throw Refusal("missingField") }
        guard let s = value as? String else { throw Refusal("wrongFieldType") }
        return s
    }

    /// The authenticated plaintext of a v1 or v2 payload; throws a `Refusal` for every failure.
    /// The order of checks is FORMAT.md §V.3 (which extends §3) and Tests/Interop/pushseal_ref.py's
    /// `parse_payload_v2` / `open_payload_v2`, so the first failing check decides the code.
    private static func open(_ userInfo: [AnyHashable: Any], appID: String?, now: Int64) throws -> Plaintext {
        // (1) presence, then type, field by field; (2) in auth mode, sender_key_id.
        let encryptedData = try Self.string(userInfo["encrypted_data"])
        let keyID = try Self.string(userInfo["key_id"])
        let algorithm = try Self.string(userInfo["enc_alg"])
        let isAuthMode = algorithm == PushSealWire.algorithmV2Auth
        let senderKeyID: String? = try isAuthMode ? Self.string(userInfo["sender_key_id"]) : nil
        // (3) emptiness, in the same order.
        guard !encryptedData.isEmpty, !keyID.isEmpty, !algorithm.isEmpty, senderKeyID?.isEmpty != true else {
            throw Refusal("emptyField")
        }
        // (4) enc_alg decides the version.
        let isVersion2: Bool
        switch algorithm {
        case PushSealWire.algorithmV1: isVersion2 = false
        case PushSealWire.algorithmV2Base, PushSealWire.algorithmV2Auth: isVersion2 = true
        default: throw Refusal("unknownAlgorithm")
        }
        // (5) key_id, then sender_key_id.
        guard PushSealWire.isValidKeyID(keyID), senderKeyID.map(PushSealWire.isValidKeyID) ?? true else {
            throw Refusal("invalidKeyID")
        }
        // (6) base64 (§4); only whitespace is `emptyField`.
        guard !PushSealWire.strippingWhitespace(encryptedData).isEmpty else { throw Refusal("emptyField") }
        guard let box = PushSealWire.decodeBase64(encryptedData) else { throw Refusal("invalidBase64") }
        // (7) the box length.
        if isVersion2 {
            guard box.count >= PushSealWire.encByteCount else { throw Refusal("invalidEnc") }
            guard box.count >= PushSealWire.encByteCount + PushSealWire.tagByteCount else { throw Refusal("truncatedBox") }
        } else {
            guard box.count >= PushSealWire.nonceByteCount + PushSealWire.tagByteCount else { throw Refusal("truncatedBox") }
        }
        // §3.2: the app id comes from the extension's own configuration, never the payload.
        guard let appID, PushSealWire.isValidAppID(appID) else { throw Refusal("invalidAppID") }

        let opened: (bytes: Data, keys: [PushSealKeyRecord])
        if isVersion2 {
            opened = try openV2(box, algorithm: algorithm, keyID: keyID, senderKeyID: senderKeyID, appID: appID, now: now)
        } else {
            opened = try openV1(box, algorithm: algorithm, keyID: keyID, appID: appID, now: now)
        }
        guard let plaintext = Plaintext(json: opened.bytes) else { throw Refusal("invalidPlaintext") }
        // docs/keychain.md: a retired (decryptOnly or disabled) key refuses a message sealed after
        // its retirement (security review F4) — the device key and, in auth mode, the sender key.
        for record in opened.keys {
            if let code = record.refusal(iat: plaintext.iat) { throw Refusal(code) }
        }
        return plaintext
    }

    /// A key item, with the status rules of docs/keychain.md applied before any opening.
    private static func usableKey(_ kind: PushSealKeyKind, keyID: String, appID: String, now: Int64,
                                  notFound: String) throws -> PushSealKeyRecord {
        switch PushSealDeviceKeys.lookup(kind, keyID: keyID, appID: appID) {
        case .found(let record):
            if let code = record.refusal(now: now) { throw Refusal(code) }
            return record
        case .notFound, .otherKind: throw Refusal(notFound)
        case .damaged: throw Refusal("corruptKey")
        // docs/keychain.md "The key manifest": an item the manifest does not vouch for.
        case .rolledBack: throw Refusal("keyRolledBack")
        // -25308: the item was stored WhenUnlocked and the phone is locked; -34018: missing
        // entitlement (keychain-access-groups); see README.md.
        case .failed(let status): throw Refusal("keychain:\(status)")
        }
    }

    /// The app's pinned sender key ids (kind 3 items, whatever their status), or the refusal.
    private static func pinnedSenderKeyIDs(appID: String) throws -> [String] {
        switch PushSealDeviceKeys.pinnedSenderKeyIDs(appID: appID) {
        case .success(let ids): return ids
        case .failure(let failure) where failure.code == "keyRolledBack" || failure.code == "corruptKey": throw Refusal(failure.code)
        case .failure(let failure): throw Refusal("keychain:\(failure.status ?? errSecParam)")
        }
    }

    // MARK: Version 1 (FORMAT.md §7 "Open")

    private static func openV1(_ box: Data, algorithm: String, keyID: String, appID: String, now: Int64) throws -> (bytes: Data, keys: [PushSealKeyRecord]) {
        let record = try Self.usableKey(.v1Key, keyID: keyID, appID: appID, now: now, notFound: "unknownKeyID")
        // Security review G2: once the app pinned a sender key, version 1 is a downgrade unless
        // the v1 key is kept with an end date (decryptOnly with notAfter: the migration window
        // PushSealDeviceKeys.pinSender opens); its iat must also be before the retirement (below).
        if !(try Self.pinnedSenderKeyIDs(appID: appID)).isEmpty,
           record.status != .decryptOnly || record.notAfter == PushSealKeyLayout.noTime {
            throw Refusal("downgradeRefused")
        }
        guard record.keyBytes.count == PushSealWire.keyByteCount else { throw Refusal("invalidKey") }
        let aad = PushSealWire.aadV1(algorithm: algorithm, keyID: keyID, appID: appID)
        do {
            // §3.1: encrypted_data is exactly CryptoKit's SealedBox.combined layout.
            let sealedBox = try AES.GCM.SealedBox(combined: box)
            let bytes = try AES.GCM.open(sealedBox, using: SymmetricKey(data: record.keyBytes), authenticating: aad)
            return (bytes, [record])
        } catch {
            throw Refusal("authenticationFailed")
        }
    }

    // MARK: Version 2 (FORMAT.md §V.7 "Open")

    private static func openV2(_ box: Data, algorithm: String, keyID: String, senderKeyID: String?, appID: String,
                        now: Int64) throws -> (bytes: Data, keys: [PushSealKeyRecord]) {
        // Step 2, sender policy, from the pinned sender keys (kind 3 items) of this app.
        let pinned = try Self.pinnedSenderKeyIDs(appID: appID)
        var senderRecord: PushSealKeyRecord?
        if senderKeyID == nil {
            // Base mode: refused once the app pinned any sender key.
            guard pinned.isEmpty else { throw Refusal("downgradeRefused") }
        } else if let senderKeyID {
            // Auth mode: the sender key must be pinned (a device that pinned nothing refuses too).
            guard pinned.contains(senderKeyID) else { throw Refusal("unknownSenderKey") }
            senderRecord = try Self.usableKey(.senderKey, keyID: senderKeyID, appID: appID, now: now, notFound: "unknownSenderKey")
        }
        // Step 3: the device private key (kind 2) by key id.
        let deviceRecord = try Self.usableKey(.v2DeviceKey, keyID: keyID, appID: appID, now: now, notFound: "unknownKeyID")
        guard let privateKey = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: deviceRecord.keyBytes) else {
            throw Refusal("corruptKey")
        }
        let senderKey: Curve25519.KeyAgreement.PublicKey?
        if let senderRecord {
            guard let key = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: senderRecord.keyBytes) else {
                throw Refusal("corruptKey")
            }
            senderKey = key
        } else {
            senderKey = nil
        }

        // Step 4: enc(32) ‖ ciphertext ‖ tag(16); refuse a wrong-length enc and an all-zero
        // X25519 result BEFORE CryptoKit's key schedule (RFC 9180 §7.1.4).
        let enc = Data(box.prefix(PushSealWire.encByteCount))
        let ciphertext = Data(box.dropFirst(PushSealWire.encByteCount))
        guard enc.count == PushSealWire.encByteCount,
              let ephemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: enc) else { throw Refusal("invalidEnc") }
        try Self.requireNonZeroSharedSecret(privateKey, ephemeral)
        if let senderKey { try Self.requireNonZeroSharedSecret(privateKey, senderKey) }

        // Step 5: key schedule and open with `info` of §V.3.2 and an empty `aad`.
        let info = PushSealWire.infoV2(algorithm: algorithm, keyID: keyID, appID: appID, senderKeyID: senderKeyID)
        do {
            var recipient: HPKE.Recipient
            if let senderKey {
                recipient = try HPKE.Recipient(privateKey: privateKey, ciphersuite: PushSealWire.ciphersuite, info: info,
                                               encapsulatedKey: enc, authenticatedBy: senderKey)
            } else {
                recipient = try HPKE.Recipient(privateKey: privateKey, ciphersuite: PushSealWire.ciphersuite, info: info,
                                               encapsulatedKey: enc)
            }
            let bytes = try recipient.open(ciphertext, authenticating: Data())
            return (bytes, [deviceRecord] + (senderRecord.map { [$0] } ?? []))
        } catch {
            throw Refusal("authenticationFailed")
        }
    }

    /// X25519(private key, public key) must not be all zero (a low-order point): FORMAT.md §V.7
    /// step 4, RFC 9180 §7.1.4. CryptoKit may itself throw for such a point; that is the same
    /// refusal. The shared secret is only compared here, never used or logged.
    private static func requireNonZeroSharedSecret(_ privateKey: Curve25519.KeyAgreement.PrivateKey,
                                                   _ publicKey: Curve25519.KeyAgreement.PublicKey) throws {
        guard let shared = try? privateKey.sharedSecretFromKeyAgreement(with: publicKey),
              !PushSealWire.isAllZero(shared) else { throw Refusal("zeroSharedSecret") }
    }

    // MARK: What the app sees (security review F3)

    /// `userInfo` of a decrypted notification: the delivered `aps`, the sealed `data` under
    /// the `pushseal` member (an empty object when nothing was sealed there) and the sealed `id`
    /// under `pushseal-id`. Every other
    /// top-level member of the payload was not sealed and is dropped, so nothing unauthenticated
    /// can pass for sealed data.
    static func sealedUserInfo(_ plaintext: Plaintext, delivered: [AnyHashable: Any]) -> [AnyHashable: Any] {
        var userInfo: [AnyHashable: Any] = [PushSealConfig.sealedDataUserInfoKey: plaintext.data]
        if let aps = delivered["aps"] { userInfo["aps"] = aps }
        // The sealed id, so a retract (AppDelegate.swift) can find this notification.
        if let id = plaintext.id { userInfo[PushSealConfig.sealedIDUserInfoKey] = id }
        return userInfo
    }

    /// Presentation from the sealed `aps` object when the sender sealed one: `thread-id`,
    /// `category`, `interruption-level`, `sound` are then taken from it alone (absent = none).
    /// Without a sealed `aps`, the delivered (unauthenticated) values are kept except those that
    /// could do harm: the category (its actions) is dropped, the interruption level is capped at
    /// `active`, and a critical sound becomes the default sound.
    static func applyPresentation(_ sealed: Plaintext.APS?, delivered: [String: Any]?, to content: UNMutableNotificationContent) {
        guard let sealed else {
            content.categoryIdentifier = ""
            if content.interruptionLevel == .critical || content.interruptionLevel == .timeSensitive {
                content.interruptionLevel = .active
            }
            if let sound = delivered?["sound"] as? [String: Any], let critical = sound["critical"] as? NSNumber, critical.intValue != 0 {
                content.sound = .default
            }
            return
        }
        content.threadIdentifier = sealed.threadID ?? ""
        content.categoryIdentifier = sealed.category ?? ""
        switch sealed.interruptionLevel {
        case "passive": content.interruptionLevel = .passive
        case "time-sensitive": content.interruptionLevel = .timeSensitive
        case "critical": content.interruptionLevel = .critical
        default: content.interruptionLevel = .active
        }
        switch sealed.sound {
        case .none: content.sound = nil
        case .named(let name)?:
            content.sound = name == "default" ? .default : UNNotificationSound(named: UNNotificationSoundName(rawValue: name))
        case .critical(let name, let volume)?:
            // Needs Apple's critical alerts entitlement; without it iOS plays a normal sound.
            content.sound = name == "default" ? .defaultCriticalSound(withAudioVolume: volume)
                : .criticalSoundNamed(UNNotificationSoundName(rawValue: name), withAudioVolume: volume)
        }
    }

    // MARK: Stage 2: media (FORMAT.md §5 `media`)

    private func download(_ media: Plaintext.Media, deadline: Date) {
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 1, let url = URL(string: media.url) else { return deliver() }
        var request = URLRequest(url: url)
        request.timeoutInterval = remaining
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForResource = remaining
        let session = URLSession(configuration: configuration)
        // Plain http is refused by App Transport Security unless the app declares an exception.
        let task = session.downloadTask(with: request) { [self] file, response, error in
            defer { session.finishTasksAndInvalidate(); deliver() }
            guard error == nil, let file, (response as? HTTPURLResponse)?.statusCode == 200 else {
                return log.error("stage=download event=failed")
            }
            // The temporary file disappears when this handler returns: read it now (mapped, not copied).
            guard let downloaded = try? Data(contentsOf: file, options: .alwaysMapped),
                  downloaded.count <= PushSealConfig.maxMediaByteCount + 28 else {
                return log.error("stage=download event=tooLarge")
            }
            if let expected = media.sha256 {  // verify first, over the bytes as downloaded
                guard Data(SHA256.hash(data: downloaded)) == expected else { return log.error("stage=download event=sha256Mismatch") }
            }
            var bytes = downloaded
            if let key = media.key {  // the file is itself a box under `key`, empty AAD
                guard let box = try? AES.GCM.SealedBox(combined: downloaded),
                      let plain = try? AES.GCM.open(box, using: SymmetricKey(data: key)) else {
                    return log.error("stage=download event=mediaAuthenticationFailed")
                }
                bytes = plain
            }
            attach(bytes, declaredType: media.type ?? response?.mimeType)
        }
        let started: Bool = lock.withLock {
            guard !delivered else { return false }
            self.task = task
            return true
        }
        if started { task.resume() } else { session.invalidateAndCancel() }
    }

    /// Writes the media with an extension iOS recognizes (a `.tmp` file is rejected) and
    /// updates the best attempt content with the attachment.
    private func attach(_ bytes: Data, declaredType: String?) {
        guard let fileExtension = PushSealWire.fileExtension(for: bytes, declaredType: declaredType) else {
            return log.error("stage=attach event=unrecognizedType")
        }
        let directory = PushSealConfig.appGroupDirectory() ?? FileManager.default.temporaryDirectory
        let fileURL = directory.appendingPathComponent(UUID().uuidString).appendingPathExtension(fileExtension)
        do {
            try bytes.write(to: fileURL, options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication])
            let attachment = try UNNotificationAttachment(identifier: "media", url: fileURL, options: nil)
            lock.withLock {
                guard !delivered, let text = bestAttemptContent,
                      let withMedia = text.mutableCopy() as? UNMutableNotificationContent else { return }
                withMedia.attachments = [attachment]
                bestAttemptContent = withMedia
            }
            log.info("stage=attach event=ok bytes=\(bytes.count, privacy: .public)")
        } catch {
            try? FileManager.default.removeItem(at: fileURL)
            log.error("stage=attach event=rejected")
        }
    }
}

// MARK: Replay guard (security review F2)

/// Remembers notification ids until their time is up, in the App Group container, and refuses
/// a repeated id and any message older than the oldest moment it can vouch for.
///
/// - An id is kept until the message's `exp`, else `iat` + `maxAgeSeconds` (30 days, the grace
///   window), else now + `maxAgeSeconds`; a message whose keep-until time is already past is
///   refused (`replayTooOld`). Ids are stored as SHA-256 digests (128 bits, hex), never as sent.
/// - At most `capacity` ids are kept. When more arrive before others run out, the ones that run
///   out first are dropped early and `evictedUntil` is raised to their keep-until time: every
///   message whose keep-until time is not after `evictedUntil` is then refused, since it may be
///   one of them (`replayTooOld`). So a flood of new ids can never make an old one acceptable.
/// - `vouchedSince`: after `reset(now:)` (the app's recovery from a damaged store) messages with
///   `iat` before it, or without `iat`, are refused. A store that does not exist yet vouches
///   from the beginning (0): the app installed its keys after it was created.
/// - Fails closed: no App Group container, a store or lock file that cannot be opened, read,
///   parsed or written → `replayGuardUnavailable` (original content). Files are 0600 with
///   `FileProtectionType.completeUntilFirstUserAuthentication`; writes are atomic, under
///   `flock` on a lock file, so two extension processes never lose an id.
/// - Messages without `id` are not recorded (there is nothing to compare); `push-seal` gives
///   every notification an `id` and an `exp`.
struct PushSealReplayGuard {
    /// Store and lock file names inside the App Group container.
    static let fileName = "pushseal-replay-guard.json"
    static let lockFileName = "pushseal-replay-guard.lock"
    /// Keep ids of messages without `exp` this long after `iat`: 30 days, in seconds.
    static let maxAgeSeconds: Int64 = 30 * 24 * 60 * 60
    /// Most ids kept (a few hundred KB at most).
    static let capacity = 5000

    enum Verdict: Equatable {
        case fresh, unchecked, replayed, tooOld, unavailable

        /// The fallback code, or `nil` when the message may be shown.
        var refusalCode: String? {
            switch self {
            case .fresh, .unchecked: return nil
            case .replayed: return "replayed"
            case .tooOld: return "replayTooOld"
            case .unavailable: return "replayGuardUnavailable"
            }
        }
    }

    /// The store's JSON: `{"format":"pushseal-replay-guard","version":1,"vouchedSince":0,
    /// "evictedUntil":0,"ids":{"<32 hex digits>":<keep-until, Unix seconds>}}`.
    struct Store: Codable {
        var format = "pushseal-replay-guard"
        var version = 1
        var vouchedSince: Int64 = 0
        var evictedUntil: Int64 = 0
        var ids: [String: Int64] = [:]
    }

    let directory: URL?

    /// Records `id` and tells whether the message may be shown.
    /// - Parameters: `iat`, `exp` and `now` in Unix seconds (UTC).
    func checkAndRecord(id: String?, iat: Int64?, exp: Int64?, now: Int64) -> Verdict {
        guard let id else { return .unchecked }
        let keepUntil = exp ?? iat.map { $0 &+ Self.maxAgeSeconds } ?? now &+ Self.maxAgeSeconds
        guard keepUntil > now else { return .tooOld }
        guard let directory else { return .unavailable }
        let digest = PushSealWire.hexString(Data(SHA256.hash(data: Data(id.utf8)).prefix(16)))
        return withLock(in: directory) { () -> Verdict in
            guard var store = load(from: directory) else { return .unavailable }
            store.ids = store.ids.filter { $0.value > now }
            if store.vouchedSince > 0, (iat ?? Int64.min) < store.vouchedSince { return .tooOld }
            guard keepUntil > store.evictedUntil else { return .tooOld }
            guard store.ids[digest] == nil else { return .replayed }
            store.ids[digest] = keepUntil
            if store.ids.count > Self.capacity {
                for (old, until) in store.ids.sorted(by: { $0.value < $1.value }).prefix(store.ids.count - Self.capacity) {
                    store.ids[old] = nil
                    store.evictedUntil = max(store.evictedUntil, until)
                }
            }
            return save(store, to: directory) ? .fresh : .unavailable
        } ?? .unavailable
    }

    /// Starts a new store that vouches only from `now` (the app's recovery when the store is
    /// damaged): older messages are refused from then on. Returns `false` when it cannot write.
    func reset(now: Int64) -> Bool {
        guard let directory else { return false }
        return withLock(in: directory) { save(Store(vouchedSince: now), to: directory) } ?? false
    }

    /// `nil` when the store exists but cannot be read or parsed (fail closed); a fresh store
    /// when there is none yet.
    private func load(from directory: URL) -> Store? {
        let url = directory.appendingPathComponent(Self.fileName)
        guard FileManager.default.fileExists(atPath: url.path) else { return Store() }
        guard let data = try? Data(contentsOf: url),
              let store = try? JSONDecoder().decode(Store.self, from: data),
              store.format == "pushseal-replay-guard", store.version == 1 else { return nil }
        return store
    }

    private func save(_ store: Store, to directory: URL) -> Bool {
        let url = directory.appendingPathComponent(Self.fileName)
        do {
            try JSONEncoder().encode(store).write(to: url, options: [.atomic, .completeFileProtectionUntilFirstUserAuthentication])
            try FileManager.default.setAttributes([.posixPermissions: 0o600,
                                                   .protectionKey: FileProtectionType.completeUntilFirstUserAuthentication],
                                                  ofItemAtPath: url.path)
            return true
        } catch {
            return false
        }
    }

    /// Runs `body` under an exclusive `flock` of the lock file (0600, no links followed);
    /// `nil` when the lock cannot be taken.
    private func withLock<T>(in directory: URL, _ body: () -> T) -> T? {
        let path = directory.appendingPathComponent(Self.lockFileName).path
        let fd = Darwin.open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard flock(fd, LOCK_EX) == 0 else { return nil }
        defer { flock(fd, LOCK_UN) }
        return body()
    }
}

// MARK: Plaintext (FORMAT.md §5)

/// The opened notification. A known member with the wrong JSON type rejects the whole object;
/// unknown members are ignored. (JSONSerialization keeps the last of duplicate names and does
/// not cap nesting: stricter than §5 needs your own parser; the box is authenticated anyway.)
public struct Plaintext {
    struct Media: Sendable { var url: String; var type: String?; var sha256: Data?; var key: Data? }
    struct Text { var title: String?; var subtitle: String?; var body: String? }
    /// The sealed presentation fields (README.md "Sealed presentation fields"), APNs' spelling.
    struct APS {
        enum Sound { case named(String), critical(name: String, volume: Float) }
        var threadID: String?
        var category: String?
        /// `passive`, `active`, `time-sensitive` or `critical`.
        var interruptionLevel: String?
        var sound: Sound?
    }

    /// What the receiver does with the message (FORMAT.md §5.1); absent is `display`.
    public enum Kind: String, Sendable { case display, retract }

    var text: Text
    public internal(set) var kind: Kind = .display
    /// A retract's notification ids (1–100 strings of 1–256 bytes); empty for a display message.
    public internal(set) var ids: [String] = []
    var media: Media?
    var localizations: [(tag: String, text: Text)] = []
    var data: [String: Any] = [:]
    var aps: APS?
    var iat: Int64?
    var exp: Int64?
    var id: String?

    init?(json: Data) {
        guard json.first != 0xEF,  // no byte order mark
              let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
              let kindName = Self.string(object["kind"]) else { return nil }
        // §5.1: an unknown kind is refused (never acted on, never displayed).
        guard let kind = Kind(rawValue: kindName ?? "display") else { return nil }
        self.kind = kind
        if let i = object["ids"], !(i is NSNull) {
            guard let i = i as? [String], (1...100).contains(i.count),
                  i.allSatisfy({ (1...256).contains($0.utf8.count) }) else { return nil }
            ids = i
        }
        // A display message needs a non-empty title, subtitle or body; a retract needs ids.
        switch kind {
        case .display:
            guard let text = Self.text(object) else { return nil }
            self.text = text
        case .retract:
            guard !ids.isEmpty, let t = Self.string(object["title"]), let s = Self.string(object["subtitle"]),
                  let b = Self.string(object["body"]) else { return nil }
            self.text = Text(title: t, subtitle: s, body: b)
        }
        if let m = object["media"], !(m is NSNull) {
            guard let m = m as? [String: Any], let url = m["url"] as? String,
                  ["https://", "http://"].contains(where: { url.lowercased().hasPrefix($0) }),
                  let type = Self.string(m["type"]), let hex = Self.string(m["sha256"]), let key = Self.string(m["key"])
            else { return nil }
            media = Media(url: url, type: type)
            if let hex { guard let d = PushSealWire.hexBytes(hex), d.count == 32 else { return nil }; media?.sha256 = d }
            if let key { guard let d = PushSealWire.decodeBase64(key), d.count == 32 else { return nil }; media?.key = d }
        }
        if let l = object["localizations"], !(l is NSNull) {
            guard let l = l as? [String: Any] else { return nil }
            // JSONSerialization does not keep member order (§5 does): sort for a stable choice.
            for (tag, value) in l.sorted(by: { $0.key < $1.key }) {
                guard PushSealWire.isValidLocaleTag(tag), let v = value as? [String: Any], let t = Self.text(v) else { return nil }
                localizations.append((tag, t))
            }
        }
        if let d = object["data"], !(d is NSNull) { guard let d = d as? [String: Any] else { return nil }; data = d }
        if let a = object["aps"], !(a is NSNull) {
            guard let a = a as? [String: Any], let sealed = Self.aps(a) else { return nil }
            aps = sealed
        }
        guard let iat = Self.integer(object["iat"]), let exp = Self.integer(object["exp"]),
              let id = Self.string(object["id"]) else { return nil }
        (self.iat, self.exp, self.id) = (iat, exp, id)
    }

    /// The sealed `aps` object: `thread-id`, `category` strings; `interruption-level` one of
    /// APNs' four values; `sound` a name or `{"critical": 0|1, "name": s, "volume": 0…1}`.
    /// Any other type is `invalidPlaintext`; unknown members are ignored.
    static func aps(_ a: [String: Any]) -> APS? {
        guard let threadID = string(a["thread-id"]), let category = string(a["category"]),
              let level = string(a["interruption-level"]) else { return nil }
        if let level { guard ["passive", "active", "time-sensitive", "critical"].contains(level) else { return nil } }
        var result = APS(threadID: threadID, category: category, interruptionLevel: level, sound: nil)
        let sound: Any = a["sound"] ?? NSNull()
        switch sound {
        case is NSNull: break
        case let name as String: result.sound = .named(name)
        case let s as [String: Any]:
            guard let name = string(s["name"]), let critical = integer(s["critical"]) else { return nil }
            var volume: Float = 1
            if let v = s["volume"], !(v is NSNull) {
                guard let n = v as? NSNumber, CFGetTypeID(n) != CFBooleanGetTypeID(), (0...1).contains(n.doubleValue) else { return nil }
                volume = n.floatValue
            }
            let soundName = name ?? "default"
            result.sound = (critical ?? 0) != 0 ? .critical(name: soundName, volume: volume) : .named(soundName)
        default: return nil
        }
        return result
    }

    /// pt-BR → pt → the top-level text, for each preferred language in order; a member missing
    /// in the variant falls back to the top-level one.
    func localized(for languages: [String]) -> Text {
        func normalized(_ tag: String) -> String { tag.replacingOccurrences(of: "_", with: "-").lowercased() }
        for language in languages {
            var wanted = normalized(language)
            while !wanted.isEmpty {
                if let v = localizations.first(where: { normalized($0.tag) == wanted })?.text {
                    return Text(title: v.title ?? text.title, subtitle: v.subtitle ?? text.subtitle, body: v.body ?? text.body)
                }
                guard let cut = wanted.lastIndex(of: "-") else { break }
                wanted = String(wanted[..<cut])
            }
        }
        return text
    }

    /// title, subtitle, body: strings or absent, at least one non-empty.
    static func text(_ o: [String: Any]) -> Text? {
        guard let t = string(o["title"]), let s = string(o["subtitle"]), let b = string(o["body"]),
              [t, s, b].contains(where: { !($0 ?? "").isEmpty }) else { return nil }
        return Text(title: t, subtitle: s, body: b)
    }

    /// `.some(nil)` when absent or null, `.some(s)` for a string, `nil` for another type.
    static func string(_ v: Any?) -> String?? {
        if v == nil || v is NSNull { return .some(nil) }
        guard let s = v as? String else { return nil }
        return .some(s)
    }

    /// A JSON integer ≥ 0 (not a boolean, not 1.5); absent → `.some(nil)`; else `nil`.
    static func integer(_ v: Any?) -> Int64?? {
        if v == nil || v is NSNull { return .some(nil) }
        guard let n = v as? NSNumber, CFGetTypeID(n) != CFBooleanGetTypeID(), !CFNumberIsFloatType(n),
              n.int64Value >= 0 else { return nil }
        return .some(n.int64Value)
    }
}
