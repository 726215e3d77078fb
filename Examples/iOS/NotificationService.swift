// PushSeal reference Notification Service Extension for a real iPhone (iOS 16+).
//
// Opens PushSeal wire format v1 (docs/FORMAT.md) with Apple's frameworks only: CryptoKit for
// AES-256-GCM and SHA-256, Security for the keychain item, UserNotifications for the content.
// It cannot be compiled on Linux; Tests/PushSealWireTests/IOSExampleDriftTests.swift checks
// its field names, AAD and plaintext members against FORMAT.md and the PushSealWire constants.
//
// Fallback ladder (DESIGN.md "What falls back means"): decrypted with media → decrypted without
// media → the original content as delivered. The content handler is called exactly once; the
// user never sees error text, ciphertext or a blank notification.
import CryptoKit
import Foundation
import os
import Security
@preconcurrency import UserNotifications

/// Names shared with the server side. They must match `push-keys import` / the PushSeal keys
/// module's device-key layout (generic password item, service + account = key id).
enum PushSealConfig {
    /// Info.plist keys of the extension (see Info.plist-snippet.xml), never read from the payload.
    static let appIDInfoKey = "PushSealAppID"
    static let accessGroupInfoKey = "PushSealKeychainAccessGroup"
    static let appGroupInfoKey = "PushSealAppGroup"
    /// `kSecAttrService` of device key items; `kSecAttrAccount` is the key id.
    static let keychainService = "pushseal.key"
    /// iOS gives an extension about 30 s; keep a margin for the expiry path.
    static let budgetSeconds: TimeInterval = 30
    static let safetyMarginSeconds: TimeInterval = 4
    /// Largest media file accepted (iOS image attachment limit, 10 MB).
    static let maxMediaByteCount = 10_000_000
}

/// The decrypting Notification Service Extension (NSExtensionPrincipalClass).
///
/// `@unchecked Sendable`: URLSession's completion handler needs `self`; every mutable stored
/// property is read and written only under `lock`.
final class NotificationService: UNNotificationServiceExtension, @unchecked Sendable {
    private let log = Logger(subsystem: "pushseal", category: "extension")
    private let lock = NSLock()
    private var contentHandler: ((UNNotificationContent) -> Void)?
    private var originalContent: UNNotificationContent?
    private var bestAttemptContent: UNMutableNotificationContent?
    private var delivered = false
    private var task: URLSessionTask?

    override func didReceive(_ request: UNNotificationRequest,
                             withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
        let deadline = Date().addingTimeInterval(PushSealConfig.budgetSeconds - PushSealConfig.safetyMarginSeconds)
        lock.withLock {
            self.contentHandler = contentHandler
            self.originalContent = request.content
        }
        // Stage 1 (critical): open the box. Any failure → original content (FORMAT.md §8).
        guard let plaintext = open(request.content.userInfo) else { return deliver() }
        guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else { return deliver() }
        let text = plaintext.localized(for: Locale.preferredLanguages)
        content.title = text.title ?? ""
        content.subtitle = text.subtitle ?? ""
        content.body = text.body ?? ""
        guard !(content.title.isEmpty && content.subtitle.isEmpty && content.body.isEmpty) else { return deliver() }
        var userInfo = content.userInfo
        for (key, value) in plaintext.data where key != "aps" { userInfo[key] = value }
        content.userInfo = userInfo
        lock.withLock { bestAttemptContent = content }  // the expiry path now shows decrypted text

        // Stage 2 (optional): media. Failure keeps the decrypted text without an attachment.
        guard let media = plaintext.media else { return deliver() }
        download(media, deadline: deadline)
    }

    override func serviceExtensionTimeWillExpire() {
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

    // MARK: Stage 1: open (FORMAT.md §7 "Open")

    /// The authenticated plaintext, or `nil` for every failure (only the code is logged).
    private func open(_ userInfo: [AnyHashable: Any]) -> Plaintext? {
        // §3: the three fields, checked in the documented order.
        guard let encryptedData = userInfo["encrypted_data"] as? String,
              let keyID = userInfo["key_id"] as? String,
              let algorithm = userInfo["enc_alg"] as? String
        else { return fail("missingField") }
        guard !encryptedData.isEmpty, !keyID.isEmpty, !algorithm.isEmpty else { return fail("emptyField") }
        guard algorithm == "A256GCM" else { return fail("unknownAlgorithm") }
        guard PushSealWire.isValidKeyID(keyID) else { return fail("invalidKeyID") }
        guard let box = PushSealWire.decodeBase64(encryptedData) else { return fail("invalidBase64") }
        guard box.count >= 28 else { return fail("truncatedBox") }  // nonce(12) + tag(16), §3.1

        // §3.2: the app id comes from the extension's own configuration, never the payload.
        guard let appID = Bundle.main.object(forInfoDictionaryKey: PushSealConfig.appIDInfoKey) as? String,
              PushSealWire.isValidAppID(appID) else { return fail("invalidAppID") }
        guard let keyData = PushSealKeychain.loadKey(keyID: keyID, log: log) else { return fail("unknownKeyID") }
        guard keyData.count == 32 else { return fail("invalidKey") }

        let aad = Data("pushseal:v1|\(algorithm)|\(keyID)|\(appID)".utf8)
        let opened: Data
        do {
            // §3.1: encrypted_data is exactly CryptoKit's SealedBox.combined layout.
            let sealedBox = try AES.GCM.SealedBox(combined: box)
            opened = try AES.GCM.open(sealedBox, using: SymmetricKey(data: keyData), authenticating: aad)
        } catch {
            return fail("authenticationFailed")
        }
        guard let plaintext = Plaintext(json: opened) else { return fail("invalidPlaintext") }
        // §5: `exp` is checked only after authentication; a stale message shows the original.
        if let exp = plaintext.exp, Int64(Date().timeIntervalSince1970) >= exp { return fail("expired") }
        log.info("stage=open event=ok")
        return plaintext
    }

    private func fail(_ code: String) -> Plaintext? {
        log.error("stage=open event=fallback code=\(code, privacy: .public)")
        return nil
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

extension PushSealConfig {
    /// The App Group container (shared with the app), or `nil` when not configured.
    static func appGroupDirectory() -> URL? {
        guard let group = Bundle.main.object(forInfoDictionaryKey: appGroupInfoKey) as? String else { return nil }
        return FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group)
    }
}

// MARK: Keychain

/// The device key as a keychain item: generic password, service `pushseal.key`, account = key
/// id, in the shared keychain access group, accessible after first unlock (this device only),
/// so the extension can read it while the phone is locked.
enum PushSealKeychain {
    static func baseQuery(keyID: String) -> [String: Any]? {
        guard let group = Bundle.main.object(forInfoDictionaryKey: PushSealConfig.accessGroupInfoKey) as? String else { return nil }
        return [kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: PushSealConfig.keychainService,
                kSecAttrAccount as String: keyID,
                kSecAttrAccessGroup as String: group]
    }

    /// Reads the 32-byte key (extension). Logs the OSStatus: -25308 means the item was stored
    /// WhenUnlocked and the phone is locked; -34018 a missing entitlement; -25300 no item.
    static func loadKey(keyID: String, log: Logger) -> Data? {
        guard var query = baseQuery(keyID: keyID) else { return nil }
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess, let data = result as? Data else {
            log.error("stage=keyLookup event=failed status=\(status, privacy: .public)")
            return nil
        }
        return data
    }

    /// Stores a provisioned key (host app, e.g. after the server sends it over your TLS API).
    static func saveKey(_ key: Data, keyID: String) -> OSStatus {
        guard key.count == 32, PushSealWire.isValidKeyID(keyID), var query = baseQuery(keyID: keyID) else { return errSecParam }
        SecItemDelete(query as CFDictionary)
        query[kSecValueData as String] = key
        query[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        return SecItemAdd(query as CFDictionary, nil)
    }
}

// MARK: Plaintext (FORMAT.md §5)

/// The opened notification. A known member with the wrong JSON type rejects the whole object;
/// unknown members are ignored. (JSONSerialization keeps the last of duplicate names and does
/// not cap nesting: stricter than §5 needs your own parser; the box is authenticated anyway.)
struct Plaintext {
    struct Media: Sendable { var url: String; var type: String?; var sha256: Data?; var key: Data? }
    struct Text { var title: String?; var subtitle: String?; var body: String? }

    var text: Text
    var media: Media?
    var localizations: [(tag: String, text: Text)] = []
    var data: [String: Any] = [:]
    var iat: Int64?
    var exp: Int64?
    var id: String?

    init?(json: Data) {
        guard json.first != 0xEF,  // no byte order mark
              let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any],
              let text = Self.text(object) else { return nil }
        self.text = text
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
        guard let iat = Self.integer(object["iat"]), let exp = Self.integer(object["exp"]),
              let id = Self.string(object["id"]) else { return nil }
        (self.iat, self.exp, self.id) = (iat, exp, id)
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

// MARK: Wire helpers (FORMAT.md §3, §3.2, §4)

enum PushSealWire {
    /// §3: 1–64 characters of A–Z a–z 0–9 _ -.
    static func isValidKeyID(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count) && s.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x5F || $0 == 0x2D }
    }

    /// §3.2: 1–255 bytes of printable ASCII other than `|`.
    static func isValidAppID(_ s: String) -> Bool {
        (1...255).contains(s.utf8.count) && s.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != 0x7C }
    }

    /// §5: 1–35 of A–Z a–z 0–9 - _.
    static func isValidLocaleTag(_ s: String) -> Bool {
        (1...35).contains(s.utf8.count) && s.utf8.allSatisfy { isAlphanumeric($0) || $0 == 0x5F || $0 == 0x2D }
    }

    static func isAlphanumeric(_ c: UInt8) -> Bool {
        (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c)
    }

    /// §4 reading rules: whitespace removed; standard or URL-safe alphabet (never both);
    /// padding optional but exact when present; canonical last character.
    static func decodeBase64(_ text: String) -> Data? {
        let stripped = text.utf8.filter { ![0x20, 0x09, 0x0D, 0x0A].contains($0) }
        let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let hasStandard = stripped.contains { $0 == 0x2B || $0 == 0x2F }
        let hasURLSafe = stripped.contains { $0 == 0x2D || $0 == 0x5F }
        guard !stripped.isEmpty, !(hasStandard && hasURLSafe) else { return nil }
        let mapped = stripped.map { $0 == 0x2D ? 0x2B : $0 == 0x5F ? 0x2F : $0 }
        let body = Array(mapped.prefix { $0 != 0x3D })
        let padCount = mapped.count - body.count
        if padCount > 0 {
            guard mapped.count % 4 == 0, padCount <= 2, mapped.suffix(padCount).allSatisfy({ $0 == 0x3D }) else { return nil }
        }
        guard body.count % 4 != 1, let last = body.last, let value = standard.firstIndex(of: last),
              body.allSatisfy({ standard.contains($0) }) else { return nil }
        let unusedBits = [0: 0, 2: 0x0F, 3: 0x03][body.count % 4] ?? 0
        guard value & unusedBits == 0 else { return nil }
        let padded = body + Array(repeating: 0x3D, count: (4 - body.count % 4) % 4)
        return Data(base64Encoded: Data(padded))
    }

    static func hexBytes(_ s: String) -> Data? {
        let digits = Array(s.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out = Data()
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }

    /// By content first (iOS checks it), then by the declared MIME type.
    static func fileExtension(for bytes: Data, declaredType: String?) -> String? {
        let head = [UInt8](bytes.prefix(12))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "jpg" }
        if head.starts(with: Array("GIF8".utf8)) { return "gif" }
        let byType = ["image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "video/mp4": "mp4",
                      "video/mpeg": "mpg", "video/x-msvideo": "avi", "audio/mpeg": "mp3", "audio/mp4": "m4a",
                      "audio/x-m4a": "m4a", "audio/aiff": "aiff", "audio/wav": "wav", "audio/x-wav": "wav"]
        return declaredType.flatMap { byType[$0.lowercased()] }
    }
}
