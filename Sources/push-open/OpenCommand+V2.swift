#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCLI
import PushSealCrypto
import PushSealExtension
import PushSealKeyProviders
import PushSealKeys
import PushSealWire

/// Interim version 2 key source for `push-open` (until the device keychain layout of
/// docs/keychain.md "Device key items" has its reader): `--v2-device-key-file F` (a private
/// 0600 file holding the device's 32-byte X25519 private key as 64 hex digits or padded base64)
/// served for `--v2-key-id ID`, and `--pinned-sender RECORD` (repeatable). Every other key id
/// is read from the keychain as before.
extension OpenCommand {
    static let v2Options: [OptionSpec] = [
        .value("--v2-device-key-file", "FILE", "interim, until push-keys device keys: a 0600 file with the device's 32-byte X25519 private key (64 hex digits or base64), used for --v2-key-id; opens wire format v2 (HPKE) payloads"),
        .value("--v2-key-id", "ID", "the key id the --v2-device-key-file key is held under (required with it)"),
        .value("--pinned-sender", "RECORD", "a pushseal-sender-key record (a file, or the JSON text) this app pinned: auth-mode payloads by it open, base-mode payloads are refused (repeat for a sender key rotation)", repeatable: true),
    ]

    /// The typed form of ``v2Options``.
    struct V2KeyOptions: CommandOptions {
        /// `--v2-device-key-file`: the private key file, or nil.
        let deviceKeyFile: String?
        /// `--v2-key-id`: the key id served from that file, or nil.
        let keyID: String?
        /// `--pinned-sender`: each record argument (a file, or JSON text starting with `{`).
        let pinnedSenders: [String]

        init(parsing a: Arguments) throws {
            deviceKeyFile = a.value("--v2-device-key-file")
            keyID = a.value("--v2-key-id")
            pinnedSenders = a.values("--pinned-sender")
        }

        /// True when no v2 option is given: push-open opens version 1 only.
        var isEmpty: Bool { deviceKeyFile == nil && keyID == nil && pinnedSenders.isEmpty }

        /// `--v2-key-id` and `--v2-device-key-file` go together; the key id is a valid key id.
        /// - Throws: `CLIError` 64.
        func validate() throws {
            if keyID != nil, deviceKeyFile == nil { throw CLIError.usage("--v2-key-id needs --v2-device-key-file") }
            if deviceKeyFile != nil {
                guard let keyID, WireFormat.isValidKeyID(keyID) else {
                    throw CLIError.usage("--v2-device-key-file needs --v2-key-id ID (1-64 of A-Z a-z 0-9 _ -)")
                }
            }
        }
    }

    /// The opener and the key provider: by default both from the device keychain (v1 and v2
    /// keys, pinned sender keys: docs/keychain.md "Device key items"); with the interim options,
    /// the sender policy from `--pinned-sender` and the `--v2-key-id` key from its file.
    /// - Throws: `CLIError` 65 (a bad sender record or key file), 66 (missing), 77 (a key file
    ///   readable by group or others, or not the user's), 74.
    static func v2Configuration(_ o: V2KeyOptions, appID: String, keychain provider: KeychainKeyProvider) throws
        -> (opener: WireFormatOpener, keys: any NotificationKeyProvider) {
        guard !o.isEmpty else { return (WireFormatOpener(pinnedSenderKeys: provider), provider) }
        let pins = try o.pinnedSenders.map { try pinnedSender($0, appID: appID) }
        let opener = WireFormatOpener(registry: .opening(pinnedSenders: pins))
        guard let file = o.deviceKeyFile, let keyID = o.keyID else { return (opener, provider) }
        return (opener, V2FileKeyProvider(keyID: keyID, key: try readDeviceKey(file), fallback: provider))
    }

    static func pinnedSender(_ argument: String, appID: String) throws -> PinnedSenderKey {
        let bytes = argument.hasPrefix("{") ? Array(argument.utf8) : try InputReader.readAll(argument, limitByteCount: 64 << 10)
        do {
            return try PinnedSenderKey(record: bytes, appID: appID)
        } catch let e as FormatError {
            throw CLIError(code: "invalidSenderKeyRecord", "--pinned-sender: \(e.reason)", exitCode: .dataError)
        }
    }

    /// Reads the 32-byte private key from a private file (regular, the user's, no group or
    /// other bits; PushSealSystem's `PrivateFile` rules).
    static func readDeviceKey(_ path: String) throws -> SecretBytes {
        var data = try InputReader.readPrivateFile(path, limitByteCount: 1024, what: "device key file")
        defer { SecretBytes.wipe(&data) }
        guard let key = DeviceKeyItem.privateKey(fromText: data) else {
            throw CLIError(code: "invalidKey", "\(path) does not hold a 32-byte key as 64 hex digits or base64", exitCode: .dataError)
        }
        return key
    }
}

/// The interim v2 key: one key id served from memory, every other from the keychain provider.
struct V2FileKeyProvider: NotificationKeyProvider {
    let keyID: String
    let key: SecretBytes
    let fallback: any NotificationKeyProvider

    func key(for keyID: String) throws -> SecretBytes {
        keyID == self.keyID ? SecretBytes(copying: key.copyBytes()) : try fallback.key(for: keyID)
    }
}
