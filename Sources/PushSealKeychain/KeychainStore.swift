#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealJSON

/// Paths inside a keychain directory.
struct KeychainPaths: Sendable {
    let root: String
    var meta: String { root + "/keychain.meta" }
    var deviceSecret: String { root + "/device-secret" }
    var state: String { root + "/device-state" }
    var lock: String { root + "/.lock" }
    var items: String { root + "/items" }
    var temp: String { root + "/tmp" }
    var appGroups: String { root + "/app-groups" }
    func item(_ name: String) -> String { items + "/" + name }
}

/// Argon2id parameters for the passcode (libsodium `crypto_pwhash`, Argon2id v1.3).
public struct PasscodeParameters: Sendable, Hashable {
    /// Passes (libsodium ops limit), 1...``maxOpsLimit``.
    public var opsLimit: UInt64
    /// Memory in bytes, 8 KiB...``maxMemLimitBytes``.
    public var memLimitBytes: Int

    /// Creates parameters.
    public init(opsLimit: UInt64, memLimitBytes: Int) {
        self.opsLimit = opsLimit
        self.memLimitBytes = memLimitBytes
    }

    /// libsodium's "interactive" profile: 2 passes, 64 MiB.
    public static let interactive = PasscodeParameters(opsLimit: Argon2id.interactiveOpsLimit, memLimitBytes: Argon2id.interactiveMemLimitBytes)
    /// Cheap parameters for tests only: 1 pass, 8 MiB.
    public static let testing = PasscodeParameters(opsLimit: 1, memLimitBytes: 8 << 20)
    /// Upper cap accepted when reading a stored keychain: 10 passes.
    public static let maxOpsLimit: UInt64 = 10
    /// Upper cap accepted when reading a stored keychain: 1 GiB.
    public static let maxMemLimitBytes = 1 << 30

    var isWithinCaps: Bool {
        (1...Self.maxOpsLimit).contains(opsLimit) && (8192...Self.maxMemLimitBytes).contains(memLimitBytes)
    }
}

/// `keychain.meta`: format version, wrapped class keys, passcode parameters (JSON, written once).
struct KeychainMeta {
    static let format = "pushseal-keychain"
    static let version = 1

    /// Boxes (base64 in the file) of the metadata key and the class keys under the device KEK.
    var wrappedMetadataKey: [UInt8]
    var wrappedAfterFirstUnlockKey: [UInt8]
    /// Present only without a passcode.
    var wrappedWhenUnlockedKey: [UInt8]?
    var passcode: Passcode?

    struct Passcode {
        var salt: [UInt8]
        var parameters: PasscodeParameters
        /// The class A key under the passcode KEK (device secret ‖ Argon2id(passcode)).
        var wrappedWhenUnlockedKey: [UInt8]
    }

    func encode() throws -> [UInt8] {
        var keys: JSONObject = [
            "afterFirstUnlock": .string(Data(wrappedAfterFirstUnlockKey).base64EncodedString()),
            "metadata": .string(Data(wrappedMetadataKey).base64EncodedString()),
        ]
        if let w = wrappedWhenUnlockedKey { keys["whenUnlocked"] = .string(Data(w).base64EncodedString()) }
        var object: JSONObject = ["classKeys": .object(keys), "format": .string(Self.format)]
        if let p = passcode {
            object["passcode"] = .object([
                "algorithm": .string("argon2id13"),
                "memLimitBytes": .integer(Int64(p.parameters.memLimitBytes)),
                "opsLimit": .integer(Int64(p.parameters.opsLimit)),
                "salt": .string(Data(p.salt).base64EncodedString()),
                "wrappedWhenUnlockedKey": .string(Data(p.wrappedWhenUnlockedKey).base64EncodedString()),
            ])
        }
        object["version"] = .integer(Int64(Self.version))
        // Format rule: pretty-printed with sorted keys (a file people read), one trailing newline.
        return try JSONWriter.serialize(.object(object), style: .prettySortedKeys) + [0x0A]
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> KeychainMeta {
        func bad(_ what: String) -> KeychainError { KeychainError(.corrupt, "\(path) is damaged: \(what)") }
        guard let object = (try? JSONReader.parse(bytes))?.objectValue else { throw bad("not a JSON object") }
        guard object["format"]?.stringValue == format else { throw bad("not a PushSeal keychain") }
        guard let v = object["version"]?.integerValue, v == version else { throw bad("unsupported version") }
        func box(_ value: JSONValue?, _ name: String) throws -> [UInt8] {
            guard let s = value?.stringValue, let d = Data(base64Encoded: s), d.count >= AES256GCM.minimumCombinedByteCount else {
                throw bad("\(name) is missing or not base64")
            }
            return Array(d)
        }
        guard let keys = object["classKeys"]?.objectValue else { throw bad("classKeys missing") }
        var meta = KeychainMeta(wrappedMetadataKey: try box(keys["metadata"], "classKeys.metadata"),
                                wrappedAfterFirstUnlockKey: try box(keys["afterFirstUnlock"], "classKeys.afterFirstUnlock"),
                                wrappedWhenUnlockedKey: nil, passcode: nil)
        if let w = keys["whenUnlocked"] { meta.wrappedWhenUnlockedKey = try box(w, "classKeys.whenUnlocked") }
        if let p = object["passcode"] {
            guard let p = p.objectValue, p["algorithm"]?.stringValue == "argon2id13",
                  let saltText = p["salt"]?.stringValue, let salt = Data(base64Encoded: saltText), salt.count == Argon2id.saltByteCount,
                  let ops = p["opsLimit"]?.integerValue, ops > 0, let mem = p["memLimitBytes"]?.integerValue, let memBytes = Int(exactly: mem)
            else { throw bad("passcode record malformed") }
            let parameters = PasscodeParameters(opsLimit: UInt64(ops), memLimitBytes: memBytes)
            guard parameters.isWithinCaps else {
                throw bad("passcode parameters exceed the cap (opsLimit <= \(PasscodeParameters.maxOpsLimit), memLimitBytes <= \(PasscodeParameters.maxMemLimitBytes))")
            }
            meta.passcode = Passcode(salt: Array(salt), parameters: parameters,
                                     wrappedWhenUnlockedKey: try box(p["wrappedWhenUnlockedKey"], "passcode.wrappedWhenUnlockedKey"))
        }
        guard (meta.passcode == nil) != (meta.wrappedWhenUnlockedKey == nil) else {
            throw bad("the whenUnlocked class key must be wrapped by the device secret or by the passcode, exactly one")
        }
        return meta
    }
}

/// `device-state`: the lock state, sealed under the metadata key. While unlocked with a
/// passcode it also holds the class A key wrapped by the session KEK (the emulation's stand-in for
/// the key the kernel keeps in memory while a phone is unlocked), so readers never run Argon2id.
struct StateRecord {
    var state: DeviceState
    /// Class A key sealed under the session KEK; only while unlocked with a passcode.
    var sessionBox: [UInt8]?

    static let aad: [UInt8] = Array("pushseal-keychain:v1:device-state".utf8)

    func encode(metadataKey: SecretBytes) throws -> [UInt8] {
        var plain: [UInt8] = [1, state.storageTag]
        if let s = sessionBox { plain.append(1); plain += s } else { plain.append(0) }
        do {
            return try AES256GCM.seal(plain, with: metadataKey, authenticating: Self.aad).combined
        } catch {
            throw KeychainError(.io, "cannot seal the device state")
        }
    }

    static func decode(_ bytes: [UInt8], path: String, metadataKey: SecretBytes) throws -> StateRecord {
        func bad(_ what: String) -> KeychainError { KeychainError(.corrupt, "\(path) is damaged: \(what)") }
        let plain: [UInt8]
        do {
            plain = try AES256GCM.open(try SealedBox(combined: bytes), with: metadataKey, authenticating: aad)
        } catch {
            throw bad("does not authenticate (modified, truncated, or another device secret)")
        }
        guard plain.count >= 3, plain[0] == 1, let state = DeviceState(storageTag: plain[1]) else { throw bad("malformed") }
        switch plain[2] {
        case 0 where plain.count == 3: return StateRecord(state: state, sessionBox: nil)
        case 1 where plain.count > 3: return StateRecord(state: state, sessionBox: Array(plain[3...]))
        default: throw bad("malformed")
        }
    }
}

/// Key derivation and wrapping for the class keys. Labels are fixed strings (domain separation).
enum KeyWrap {
    static let deviceSecretByteCount = 32

    static func kek(_ ikm: SecretBytes, _ label: String) throws -> SecretBytes {
        do {
            return try HKDFSHA256.deriveKey(inputKeyMaterial: ikm, info: Array("pushseal-keychain:v1:\(label)".utf8), outputByteCount: 32)
        } catch {
            throw KeychainError(.io, "key derivation failed")
        }
    }

    static func aad(_ name: String) -> [UInt8] { Array("pushseal-keychain:v1:class-key:\(name)".utf8) }

    static func wrap(_ key: SecretBytes, with kek: SecretBytes, name: String) throws -> [UInt8] {
        do {
            return try key.withUnsafeBytes { k in try aad(name).withUnsafeBytes { a in try AES256GCM.seal(k, with: kek, authenticating: a) } }.combined
        } catch {
            throw KeychainError(.io, "cannot wrap the \(name) key")
        }
    }

    /// - Returns: `nil` when the box does not open (wrong KEK or modified box).
    static func unwrap(_ box: [UInt8], with kek: SecretBytes, name: String) -> SecretBytes? {
        guard let sealed = try? SealedBox(combined: box), var plain = try? AES256GCM.open(sealed, with: kek, authenticating: aad(name)) else {
            return nil
        }
        defer { SecretBytes.wipe(&plain) }
        guard plain.count == AES256GCM.keyByteCount else { return nil }
        return SecretBytes(copying: plain)
    }

    /// The passcode KEK: HKDF over device secret ‖ Argon2id(passcode). Argon2id runs here only
    /// (create, unlock), never on the read path.
    static func passcodeKEK(passcode: String, salt: [UInt8], parameters: PasscodeParameters, deviceSecret: SecretBytes) throws -> SecretBytes {
        guard parameters.isWithinCaps else { throw KeychainError(.param, "passcode parameters out of range") }
        let stretched: SecretBytes
        do {
            stretched = try Argon2id.deriveKey(password: Array(passcode.utf8), salt: salt, opsLimit: parameters.opsLimit,
                                               memLimitBytes: parameters.memLimitBytes, outputByteCount: 32)
        } catch {
            throw KeychainError(.io, "Argon2id failed: \(error)")
        }
        var ikm = deviceSecret.copyBytes() + stretched.copyBytes()
        defer { SecretBytes.wipe(&ikm) }
        return try kek(SecretBytes(copying: ikm), "passcode-kek")
    }

    static func passcodeName(_ p: PasscodeParameters) -> String { "whenUnlocked:passcode:\(p.opsLimit):\(p.memLimitBytes)" }
}
