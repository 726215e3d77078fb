#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealJSON
import PushSealSystem

/// Paths inside a keychain directory.
struct KeychainPaths: Sendable {
    let root: String
    var meta: String { root + "/keychain.meta" }
    var deviceSecret: String { root + "/device-secret" }
    var state: String { root + "/device-state" }
    /// The per-unlock keys (``UnlockKeys``); present only after first unlock of a device with a passcode.
    var unlockKeys: String { root + "/unlock-keys" }
    /// The default place of a device secret kept outside the directory: `<DIR>.secret`, beside it.
    var besideSecret: String { root + ".secret" }
    var lock: String { root + "/.lock" }
    var items: String { root + "/items" }
    var temp: String { root + "/tmp" }
    var appGroups: String { root + "/app-groups" }
    func item(_ name: String) -> String { items + "/" + name }
}

/// A keychain's directories, each opened once (`O_DIRECTORY | O_NOFOLLOW`) and checked when the
/// keychain is opened; every file operation afterwards goes through these descriptors
/// (`openat`, `renameat`, `unlinkat`), so a directory swapped for a link, or renamed away and
/// replaced, is never followed (review F21).
struct KeychainDirectories: Sendable {
    let root: PrivateDirectory
    let items: PrivateDirectory
    let temp: PrivateDirectory
    let appGroups: PrivateDirectory

    static let itemsName = "items"
    static let tempName = "tmp"
    static let appGroupsName = "app-groups"
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

/// Where a keychain's device secret lives (recorded in `keychain.meta`, version 2).
///
/// A keychain directory copied without its device secret reads nothing: every class key and the
/// metadata key are wrapped under keys derived from it.
public enum DeviceSecretLocation: Sendable, Hashable {
    /// `DIR/device-secret`, inside the keychain directory: the emulated device's layout (and that
    /// of every keychain made before 0.2.0). A copy of the directory carries its secret.
    case insideDirectory
    /// `DIR.secret`, beside the keychain directory (the default of `push-keys` for the keychains
    /// it creates): a copy or backup of the directory alone reads nothing.
    case besideDirectory
    /// A file anywhere, by absolute path (e.g. on another disk, a tmpfs filled at boot, a systemd
    /// credential). 0600, owned by the caller, not a symbolic link.
    case file(String)

    /// The string kept in `keychain.meta`: `inside`, `beside`, or the absolute path.
    var metaValue: String {
        switch self {
        case .insideDirectory: "inside"
        case .besideDirectory: "beside"
        case .file(let path): path
        }
    }

    init?(metaValue: String) {
        switch metaValue {
        case "inside": self = .insideDirectory
        case "beside": self = .besideDirectory
        default:
            guard metaValue.hasPrefix("/"), !metaValue.utf8.contains(0) else { return nil }
            self = .file(metaValue)
        }
    }

    func path(_ paths: KeychainPaths) -> String {
        switch self {
        case .insideDirectory: paths.deviceSecret
        case .besideDirectory: paths.besideSecret
        case .file(let path): path
        }
    }
}

/// `keychain.meta`: format version, wrapped class keys, passcode parameters, where the device
/// secret lives (JSON, written once).
///
/// Version 1 (before 0.2.0): device secret inside the directory; the afterFirstUnlock class key
/// always under the device KEK. Version 2: `deviceSecret` names its place; with a passcode both
/// class keys are wrapped under the passcode KEK only (`passcode.wrappedAfterFirstUnlockKey`), so
/// before first unlock nothing in the files opens class C either.
struct KeychainMeta {
    static let format = "pushseal-keychain"
    static let version = 2

    var version = KeychainMeta.version
    /// Boxes (base64 in the file) of the metadata key and the class keys under the device KEK.
    var wrappedMetadataKey: [UInt8]
    /// Under the device KEK: always in version 1, only without a passcode in version 2.
    var wrappedAfterFirstUnlockKey: [UInt8]?
    /// Present only without a passcode.
    var wrappedWhenUnlockedKey: [UInt8]?
    var passcode: Passcode?
    var deviceSecret: DeviceSecretLocation = .insideDirectory

    struct Passcode {
        var salt: [UInt8]
        var parameters: PasscodeParameters
        /// The class A key under the passcode KEK (device secret ‖ Argon2id(passcode)).
        var wrappedWhenUnlockedKey: [UInt8]
        /// Version 2: the class C key under the passcode KEK.
        var wrappedAfterFirstUnlockKey: [UInt8]?
    }

    /// `true` when class C is wrapped under the passcode (version 2 with a passcode): it is
    /// readable only through the unlock record after first unlock.
    var classCNeedsPasscode: Bool { passcode?.wrappedAfterFirstUnlockKey != nil }

    func encode() throws -> [UInt8] {
        var keys: JSONObject = [:]
        if let c = wrappedAfterFirstUnlockKey { keys["afterFirstUnlock"] = .string(Data(c).base64EncodedString()) }
        keys["metadata"] = .string(Data(wrappedMetadataKey).base64EncodedString())
        if let w = wrappedWhenUnlockedKey { keys["whenUnlocked"] = .string(Data(w).base64EncodedString()) }
        var object: JSONObject = ["classKeys": .object(keys)]
        if version >= 2 { object["deviceSecret"] = .string(deviceSecret.metaValue) }
        object["format"] = .string(Self.format)
        if let p = passcode {
            var record: JSONObject = [
                "algorithm": .string("argon2id13"),
                "memLimitBytes": .integer(Int64(p.parameters.memLimitBytes)),
                "opsLimit": .integer(Int64(p.parameters.opsLimit)),
                "salt": .string(Data(p.salt).base64EncodedString()),
            ]
            if let c = p.wrappedAfterFirstUnlockKey { record["wrappedAfterFirstUnlockKey"] = .string(Data(c).base64EncodedString()) }
            record["wrappedWhenUnlockedKey"] = .string(Data(p.wrappedWhenUnlockedKey).base64EncodedString())
            object["passcode"] = .object(record)
        }
        object["version"] = .integer(Int64(version))
        // Format rule: pretty-printed with sorted keys (a file people read), one trailing newline.
        return try JSONWriter.serialize(.object(object), style: .prettySortedKeys) + [0x0A]
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> KeychainMeta {
        func bad(_ what: String) -> KeychainError { KeychainError(.corrupt, "\(path) is damaged: \(what)") }
        guard let object = (try? JSONReader.parse(bytes))?.objectValue else { throw bad("not a JSON object") }
        guard object["format"]?.stringValue == format else { throw bad("not a PushSeal keychain") }
        guard let v = object["version"]?.integerValue, v == 1 || v == 2 else {
            throw bad("unsupported version (this tool reads versions 1 and 2)")
        }
        func box(_ value: JSONValue?, _ name: String) throws -> [UInt8] {
            guard let s = value?.stringValue, let d = Data(base64Encoded: s), d.count >= AES256GCM.minimumCombinedByteCount else {
                throw bad("\(name) is missing or not base64")
            }
            return Array(d)
        }
        guard let keys = object["classKeys"]?.objectValue else { throw bad("classKeys missing") }
        var meta = KeychainMeta(version: Int(v), wrappedMetadataKey: try box(keys["metadata"], "classKeys.metadata"),
                                wrappedAfterFirstUnlockKey: nil, wrappedWhenUnlockedKey: nil, passcode: nil)
        if let c = keys["afterFirstUnlock"] { meta.wrappedAfterFirstUnlockKey = try box(c, "classKeys.afterFirstUnlock") }
        if v >= 2 {
            guard let text = object["deviceSecret"]?.stringValue, let location = DeviceSecretLocation(metaValue: text) else {
                throw bad("deviceSecret is missing or not inside, beside or an absolute path")
            }
            meta.deviceSecret = location
        }
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
            if let c = p["wrappedAfterFirstUnlockKey"] {
                guard v >= 2 else { throw bad("passcode.wrappedAfterFirstUnlockKey in a version 1 keychain") }
                meta.passcode?.wrappedAfterFirstUnlockKey = try box(c, "passcode.wrappedAfterFirstUnlockKey")
            }
        }
        // Class C: under the device KEK (no passcode, or version 1) or under the passcode KEK, exactly one.
        let underPasscode = meta.passcode?.wrappedAfterFirstUnlockKey != nil
        guard underPasscode != (meta.wrappedAfterFirstUnlockKey != nil) else {
            throw bad("the afterFirstUnlock class key must be wrapped by the device secret or by the passcode, exactly one")
        }
        if v >= 2, meta.passcode != nil, !underPasscode {
            throw bad("a version 2 keychain with a passcode wraps the afterFirstUnlock class key under the passcode")
        }
        guard (meta.passcode == nil) != (meta.wrappedWhenUnlockedKey == nil) else {
            throw bad("the whenUnlocked class key must be wrapped by the device secret or by the passcode, exactly one")
        }
        return meta
    }
}

/// `device-state`: the lock state, sealed under the metadata key, and the passcode attempt
/// counter (F6).
///
/// With a passcode it also holds the class keys readable in that state, each wrapped under
/// HKDF(device secret ‖ a per-unlock key of ``UnlockKeys``) — the emulation's stand-in for the
/// keys iOS keeps in memory: class A (`boxA`) while unlocked, class C (`boxC`, version 2 keychains)
/// from first unlock until the next `beforeFirstUnlock`. The per-unlock keys are fresh at each
/// unlock (class A) or first unlock (class C) and destroyed on lock (A) or reboot (both), so a
/// `device-state` saved earlier and put back opens nothing (F5).
///
/// Record version 2: `2 | state tag | failed attempts (u32) | last failure (i64, Unix seconds) |
/// boxA (u16 length ‖ bytes) | boxC (u16 length ‖ bytes)`, big-endian, length 0 = absent.
/// Version 1 records (before 0.2.0) are read with their session box ignored: such a keychain
/// reads as locked until it is unlocked again with its passcode.
struct StateRecord {
    var state: DeviceState
    /// Class A key sealed under the per-unlock class A key; only while unlocked with a passcode.
    var boxA: [UInt8]?
    /// Class C key sealed under the per-boot class C key; only after first unlock, with a passcode.
    var boxC: [UInt8]?
    /// Wrong passcodes in a row (reset by a right one).
    var failedAttempts: UInt32 = 0
    /// Unix seconds of the last wrong passcode (0 = none).
    var lastFailure: Int64 = 0

    static let aad: [UInt8] = Array("pushseal-keychain:v1:device-state".utf8)

    func encode(metadataKey: SecretBytes) throws -> [UInt8] {
        var plain: [UInt8] = [2, state.storageTag]
        for shift in stride(from: 24, through: 0, by: -8) { plain.append(UInt8(truncatingIfNeeded: failedAttempts >> UInt32(shift))) }
        let t = UInt64(bitPattern: lastFailure)
        for shift in stride(from: 56, through: 0, by: -8) { plain.append(UInt8(truncatingIfNeeded: t >> UInt64(shift))) }
        for box in [boxA, boxC] {
            let b = box ?? []
            plain.append(UInt8(truncatingIfNeeded: b.count >> 8))
            plain.append(UInt8(truncatingIfNeeded: b.count))
            plain += b
        }
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
        guard plain.count >= 3, let state = DeviceState(storageTag: plain[1]) else { throw bad("malformed") }
        switch plain[0] {
        case 1:
            // Version 1: 1 | tag | 0, or 1 | tag | 1 ‖ session box (under a fixed session KEK: ignored, F5).
            guard (plain[2] == 0 && plain.count == 3) || (plain[2] == 1 && plain.count > 3) else { throw bad("malformed") }
            return StateRecord(state: state, boxA: nil, boxC: nil)
        case 2:
            var offset = 2
            func take(_ n: Int) throws -> ArraySlice<UInt8> {
                guard offset + n <= plain.count else { throw bad("malformed") }
                defer { offset += n }
                return plain[offset..<(offset + n)]
            }
            let failed = try take(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let last = Int64(bitPattern: try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
            var boxes: [[UInt8]?] = []
            for _ in 0..<2 {
                let n = try take(2).reduce(0) { $0 << 8 | Int($1) }
                boxes.append(n == 0 ? nil : Array(try take(n)))
            }
            guard offset == plain.count else { throw bad("malformed") }
            return StateRecord(state: state, boxA: boxes[0], boxC: boxes[1], failedAttempts: failed, lastFailure: last)
        default:
            throw bad("unsupported record version")
        }
    }
}

/// `unlock-keys` (0600): the per-unlock keys of a device with a passcode — the class A one while
/// unlocked, the class C one after first unlock — standing in for the memory of a running phone.
/// A new random key at each unlock (A) and first unlock (C); the file is rewritten without A on
/// lock and removed on `beforeFirstUnlock`, which destroys the keys (best effort on disk: the old
/// blocks of a replaced file are the file system's).
///
/// Layout: `1 | flags (bit 0: A, bit 1: C) | A (32 bytes, if set) | C (32 bytes, if set)`.
struct UnlockKeys {
    var classA: SecretBytes?
    var classC: SecretBytes?

    static let keyByteCount = 32

    func encode() -> [UInt8] {
        var out: [UInt8] = [1, (classA == nil ? 0 : 1) | (classC == nil ? 0 : 2)]
        for k in [classA, classC] { if let k { out += k.copyBytes() } }
        return out
    }

    static func decode(_ bytes: [UInt8], path: String) throws -> UnlockKeys {
        let bad = KeychainError(.corrupt, "\(path) is damaged: malformed")
        guard bytes.count >= 2, bytes[0] == 1, bytes[1] & ~3 == 0 else { throw bad }
        var offset = 2
        var keys = UnlockKeys()
        for bit in [UInt8(1), 2] where bytes[1] & bit != 0 {
            guard offset + keyByteCount <= bytes.count else { throw bad }
            let key = SecretBytes(copying: Array(bytes[offset..<(offset + keyByteCount)]))
            if bit == 1 { keys.classA = key } else { keys.classC = key }
            offset += keyByteCount
        }
        guard offset == bytes.count else { throw bad }
        return keys
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
        // A copy of the passcode's bytes we can wipe (the caller's String is not ours to clear).
        var password = Array(passcode.utf8)
        defer { SecretBytes.wipe(&password) }
        do {
            stretched = try Argon2id.deriveKey(password: password, salt: salt, opsLimit: parameters.opsLimit,
                                               memLimitBytes: parameters.memLimitBytes, outputByteCount: 32)
        } catch {
            throw KeychainError(.io, "Argon2id failed: \(error)")
        }
        var ikm = deviceSecret.copyBytes() + stretched.copyBytes()
        defer { SecretBytes.wipe(&ikm) }
        return try kek(SecretBytes(copying: ikm), "passcode-kek")
    }

    static func passcodeName(_ p: PasscodeParameters) -> String { "whenUnlocked:passcode:\(p.opsLimit):\(p.memLimitBytes)" }
    /// The wrap name of class C under the passcode KEK (version 2), parameters bound as for class A.
    static func passcodeNameC(_ p: PasscodeParameters) -> String { "afterFirstUnlock:passcode:\(p.opsLimit):\(p.memLimitBytes)" }

    /// The KEK of a per-unlock box: HKDF over device secret ‖ the per-unlock key.
    static func sessionKEK(deviceSecret: SecretBytes, unlockKey: SecretBytes, _ label: String) throws -> SecretBytes {
        var ikm = deviceSecret.copyBytes() + unlockKey.copyBytes()
        defer { SecretBytes.wipe(&ikm) }
        return try kek(SecretBytes(copying: ikm), "session-kek:\(label)")
    }
}
