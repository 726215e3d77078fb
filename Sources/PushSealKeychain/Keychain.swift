#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import PushSealCrypto
import PushSealSystem

/// A file-backed emulation of iOS Keychain Services, opened as one identity (an app or its
/// Notification Service Extension).
///
/// A keychain is a directory (mode 0700, files 0600, owned by the caller):
/// `keychain.meta` (wrapped class keys, passcode parameters, where the device secret lives),
/// `device-secret` (32 random bytes; or outside the directory, see ``DeviceSecretLocation``),
/// `device-state` (lock state, passcode attempt counter), `unlock-keys` (per-unlock keys, with a passcode), `items/` (one file per item, named by a hash of its primary key),
/// `tmp/` (temp files of atomic writes), `app-groups/<group>/` (App Group containers) and `.lock`.
///
/// Operations mirror `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate` and `SecItemDelete`,
/// with iOS's access-group and accessibility rules and its OSStatus errors (``KeychainError``).
/// Secret data is sealed with AES-256-GCM under a per-class key; class keys are unwrapped once per
/// instance (in `init`; they wipe themselves when the instance is released). Reading one item by
/// (access group, service, account) opens one file and runs no Argon2id.
///
/// Writers in any process are serialized by `flock` on `.lock`; every write is a temp file,
/// fsync, rename, fsync of the directory. Readers take no lock.
///
/// Sendable: all stored properties are immutable except the session-key cache, which is guarded
/// by `cacheLock` (safe to share across threads, hence `@unchecked`).
public final class Keychain: @unchecked Sendable {
    /// The keychain directory.
    public let url: URL
    /// The identity this instance acts as.
    public let entitlements: Entitlements
    /// `true` when the emulated device has a passcode.
    public let isPasscodeSet: Bool

    let paths: KeychainPaths
    /// The directories opened once; every file operation goes through them (F21).
    let directories: KeychainDirectories
    let accessGroups: [String]
    private let deviceSecret: SecretBytes
    private let metadataKey: SecretBytes
    /// The metadata key (authenticates item headers and the device state; never leaves the module).
    var metadataKeyForRecords: SecretBytes { metadataKey }
    /// A key only this device derives (HKDF-SHA256 of the device secret under `label`): what a
    /// backup seals `ThisDeviceOnly` items under (``KeychainBackup``). Never leaves the module.
    /// - Throws: `KeychainError` `.io` when the derivation fails.
    func deviceBoundKey(_ label: String) throws -> SecretBytes { try KeyWrap.kek(deviceSecret, label) }
    /// Class C key when it is wrapped by the device secret (no passcode, or a version 1 keychain).
    private let afterFirstUnlockKey: SecretBytes?
    /// Class A key when no passcode is set (wrapped by the device secret alone).
    private let whenUnlockedKey: SecretBytes?
    private let meta: KeychainMeta
    private let cacheLock = PosixLock()
    /// Class keys opened from the device state's boxes, by (box, per-unlock key).
    private var sessionCache: [(box: [UInt8], unlockKey: SecretBytes, key: SecretBytes)] = []

    /// The environment variable naming a device secret file that overrides the place
    /// `keychain.meta` records (an absolute path).
    public static let deviceSecretFileVariable = "PUSHSEAL_DEVICE_SECRET_FILE"

    /// Wrong passcodes allowed before the back-off starts (as on iOS: 5).
    public static let freePasscodeAttempts: UInt32 = 5

    /// Seconds to wait before the next passcode attempt after `failed` wrong ones in a row:
    /// 0 for the first ``freePasscodeAttempts``, then 1 min, 5 min, 15 min, and 1 hour from the
    /// ninth on (the iPhone's schedule, without the optional wipe).
    public static func passcodeDelaySeconds(afterFailures failed: UInt32) -> Int64 {
        switch failed {
        case 0..<freePasscodeAttempts: 0
        case freePasscodeAttempts: 60
        case freePasscodeAttempts + 1: 300
        case freePasscodeAttempts + 2: 900
        default: 3600
        }
    }

    // MARK: Create and open

    /// Creates a new keychain directory (0700) with a fresh device secret and class keys, in the
    /// `unlocked` state.
    /// - Parameters:
    ///   - url: the directory; created with its parents if absent; if present it must be empty.
    ///   - passcode: the emulated device passcode, or `nil` for none. With one, both class keys
    ///     (`WhenUnlocked` and `AfterFirstUnlock`) are wrapped by device secret ‖ Argon2id(passcode)
    ///     only, so before first unlock nothing in the files opens an item.
    ///   - passcodeParameters: Argon2id cost (default libsodium "interactive", 2 passes, 64 MiB).
    ///   - deviceSecret: where the 32-byte device secret goes (default inside the directory, the
    ///     emulated device's layout); `.besideDirectory` or `.file(path)` keep it out of the
    ///     directory, so a copy of the directory alone reads nothing. Created `O_EXCL`, 0600.
    /// - Throws: `KeychainError` `.alreadyExists` (`url` is already a keychain, a non-empty
    ///   directory, or a file; or the device secret file exists),
    ///   `.insecurePermissions`, `.io`, `.param` (parameters out of range, a relative secret path).
    public static func create(at url: URL, passcode: String? = nil, passcodeParameters: PasscodeParameters = .interactive,
                              deviceSecret location: DeviceSecretLocation = .insideDirectory) throws {
        let paths = KeychainPaths(root: url.standardizedFileURL.path)
        if case .file(let path) = location, !path.hasPrefix("/") {
            throw KeychainError(.param, "the device secret path \(path) is not absolute")
        }
        let secretPath = location.path(paths)
        let existing = try Posix.status(paths.root)
        if existing != nil { try Posix.checkParents(of: paths.root) }
        if let st = existing {
            if Posix.isSymbolicLink(st) { throw Posix.symbolicLinkError(paths.root, .alreadyExists) }
            guard Posix.isDirectory(st) else { throw KeychainError(.alreadyExists, "\(paths.root) exists and is not a directory") }
            let entries = try Posix.list(paths.root)
            if entries.contains("keychain.meta") { throw KeychainError(.alreadyExists, "\(paths.root) is already a keychain") }
            guard entries.isEmpty else { throw KeychainError(.alreadyExists, "\(paths.root) is not empty") }
            guard st.owner == UInt32(geteuid()) else { throw KeychainError(.insecurePermissions, "\(paths.root) is owned by another user") }
        }
        if location != .insideDirectory, try Posix.status(secretPath) != nil {
            throw KeychainError(.alreadyExists, "\(secretPath) already exists (a device secret of another keychain?)",
                                suggestion: "choose another place for the device secret, or remove \(Posix.shellQuoted(secretPath)) if it is unused")
        }
        if existing != nil {
            guard chmod(paths.root, 0o700) == 0 else { throw Posix.ioError("chmod", paths.root) }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: paths.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw KeychainError(.io, "cannot create directory \(paths.root)")
            }
            guard chmod(paths.root, 0o700) == 0 else { throw Posix.ioError("chmod", paths.root) }
        }
        guard let root = try Posix.openDirectory(paths.root) else { throw Posix.ioError("open", paths.root, ENOENT) }
        let temp = try Posix.makeDirectory(KeychainDirectories.tempName, in: root)
        for d in [KeychainDirectories.itemsName, KeychainDirectories.appGroupsName] { _ = try Posix.makeDirectory(d, in: root) }

        let deviceSecret = SecretBytes(randomByteCount: KeyWrap.deviceSecretByteCount)
        var secretCopy = deviceSecret.copyBytes()
        defer { SecretBytes.wipe(&secretCopy) }
        if location == .insideDirectory {
            try Posix.createExclusive("device-secret", in: root, secretCopy)
        } else {
            try Posix.createExclusive(secretPath, secretCopy)
        }

        let deviceKEK = try KeyWrap.kek(deviceSecret, "device-kek")
        let metadataKey = SecretBytes(randomByteCount: 32)
        let classC = SecretBytes(randomByteCount: 32)
        let classA = SecretBytes(randomByteCount: 32)
        var meta = KeychainMeta(wrappedMetadataKey: try KeyWrap.wrap(metadataKey, with: deviceKEK, name: "metadata"),
                                wrappedAfterFirstUnlockKey: nil, wrappedWhenUnlockedKey: nil, passcode: nil, deviceSecret: location)
        var state = StateRecord(state: .unlocked, boxA: nil, boxC: nil)
        if let passcode {
            let salt = SecureRandom.bytes(Argon2id.saltByteCount)
            let kek = try KeyWrap.passcodeKEK(passcode: passcode, salt: salt, parameters: passcodeParameters, deviceSecret: deviceSecret)
            meta.passcode = .init(salt: salt, parameters: passcodeParameters,
                                  wrappedWhenUnlockedKey: try KeyWrap.wrap(classA, with: kek, name: KeyWrap.passcodeName(passcodeParameters)),
                                  wrappedAfterFirstUnlockKey: try KeyWrap.wrap(classC, with: kek, name: KeyWrap.passcodeNameC(passcodeParameters)))
            let unlock = UnlockKeys(classA: SecretBytes(randomByteCount: UnlockKeys.keyByteCount),
                                    classC: SecretBytes(randomByteCount: UnlockKeys.keyByteCount))
            state.boxA = try KeyWrap.wrap(classA, with: try KeyWrap.sessionKEK(deviceSecret: deviceSecret, unlockKey: unlock.classA ?? classA, "A"), name: "session")
            state.boxC = try KeyWrap.wrap(classC, with: try KeyWrap.sessionKEK(deviceSecret: deviceSecret, unlockKey: unlock.classC ?? classC, "C"), name: "session")
            var bytes = unlock.encode()
            defer { SecretBytes.wipe(&bytes) }
            try Posix.createExclusive("unlock-keys", in: root, bytes)
        } else {
            meta.wrappedAfterFirstUnlockKey = try KeyWrap.wrap(classC, with: deviceKEK, name: "afterFirstUnlock")
            meta.wrappedWhenUnlockedKey = try KeyWrap.wrap(classA, with: deviceKEK, name: "whenUnlocked")
        }
        try Posix.createExclusive("device-state", in: root, try state.encode(metadataKey: metadataKey))
        // keychain.meta last: its presence marks a complete keychain.
        try Posix.writeAtomically(try meta.encode(), named: "keychain.meta", in: root, temp: temp)
    }

    /// Opens an existing keychain as `entitlements`.
    ///
    /// Checks ownership and modes (like ssh: group- or world-accessible is refused), reads the
    /// device secret and unwraps the class keys once (HKDF + AES-GCM; no Argon2id).
    /// - Parameters:
    ///   - url: the keychain directory.
    ///   - entitlements: the caller's identity.
    ///   - deviceSecretFile: the device secret's absolute path, overriding the environment
    ///     variable ``deviceSecretFileVariable`` and the place `keychain.meta` records; `nil` for
    ///     those.
    /// - Throws: `KeychainError` `.keychainMissing` (no directory or no `keychain.meta`; `url`
    ///   itself a symbolic link), `.insecurePermissions` (also: a parent directory others can
    ///   write without the sticky bit, or owned by another user but root), `.deviceSecretMissing` (the device secret is not where it was
    ///   looked for: a copied directory without its secret), `.symbolicLink` (a link inside the
    ///   keychain, or the secret file a link), `.insecurePermissions`, `.corrupt` (damaged files,
    ///   wrong device secret), `.io`.
    public init(opening url: URL, as entitlements: Entitlements, deviceSecretFile: String? = nil) throws {
        let paths = KeychainPaths(root: url.standardizedFileURL.path)
        guard let st = try Posix.status(paths.root) else { throw KeychainError(.keychainMissing, "no keychain at \(paths.root)") }
        if Posix.isSymbolicLink(st) { throw Posix.symbolicLinkError(paths.root, .keychainMissing) }
        guard Posix.isDirectory(st) else { throw KeychainError(.keychainMissing, "\(paths.root) is not a directory") }
        try Posix.checkOwnership(st, paths.root)
        try Posix.checkParents(of: paths.root)
        // From here on, the root is reached only through this descriptor (F21).
        guard let root = try Posix.openDirectory(paths.root) else { throw KeychainError(.keychainMissing, "no keychain at \(paths.root)") }
        guard let metaBytes = try Posix.readFile("keychain.meta", in: root, maxByteCount: 64 << 10) else {
            if try Posix.names(in: root).isEmpty { throw KeychainError(.keychainMissing, "\(paths.root) is not a keychain (empty directory)") }
            throw KeychainError(.keychainMissing, "\(paths.root) is not a keychain (no keychain.meta)")
        }
        let meta = try KeychainMeta.decode(metaBytes, path: paths.meta)
        var secretPath = meta.deviceSecret.path(paths)
        var source = "keychain.meta"
        if let override = deviceSecretFile ?? ProcessInfo.processInfo.environment[Self.deviceSecretFileVariable], !override.isEmpty {
            guard override.hasPrefix("/") else {
                throw KeychainError(.param, "the device secret path \(override) is not absolute",
                                    suggestion: "give an absolute path, e.g. \(Self.deviceSecretFileVariable)=\"$PWD/\(override)\"")
            }
            secretPath = override
            source = deviceSecretFile == nil ? Self.deviceSecretFileVariable : "the caller"
        }
        let secretRead: [UInt8]?
        do {
            secretRead = secretPath == paths.deviceSecret
                ? try Posix.readFile("device-secret", in: root, maxByteCount: 1024)
                : try Posix.readFile(secretPath, maxByteCount: 1024)
        } catch let e as KeychainError where e.code == .symbolicLink && secretPath != paths.deviceSecret {
            throw KeychainError(.symbolicLink, "the device secret \(secretPath) is a symbolic link: refused, never followed", suggestion: e.suggestion)
        }
        guard var secretBytes = secretRead else {
            throw KeychainError(.deviceSecretMissing, "the device secret of \(paths.root) is not at \(secretPath) (as \(source) says)",
                                suggestion: "give its path with \(Self.deviceSecretFileVariable)=FILE; a keychain directory copied without its device secret cannot be read")
        }
        defer { SecretBytes.wipe(&secretBytes) }
        guard secretBytes.count == KeyWrap.deviceSecretByteCount else {
            throw KeychainError(.corrupt, "\(secretPath) is \(secretBytes.count) bytes, expected \(KeyWrap.deviceSecretByteCount)")
        }
        func subdirectory(_ name: String) throws -> PrivateDirectory {
            guard let d = try Posix.openDirectory(name, in: root) else { throw KeychainError(.corrupt, "\(root.child(name)) is missing") }
            return d
        }
        let directories = KeychainDirectories(root: root, items: try subdirectory(KeychainDirectories.itemsName),
                                              temp: try subdirectory(KeychainDirectories.tempName),
                                              appGroups: try subdirectory(KeychainDirectories.appGroupsName))
        // The writers' lock file is opened only by writers; check it at every open, as item files are read.
        try Posix.checkPrivateFile(".lock", in: root)
        try Posix.checkPrivateFile("unlock-keys", in: root)
        let deviceSecret = SecretBytes(copying: secretBytes)
        let deviceKEK = try KeyWrap.kek(deviceSecret, "device-kek")
        let wrongSecret = KeychainError(.corrupt,
            "the device secret does not unwrap the class keys of \(paths.meta) (wrong or replaced device secret \(secretPath), or a modified keychain.meta)")
        guard let metadataKey = KeyWrap.unwrap(meta.wrappedMetadataKey, with: deviceKEK, name: "metadata") else { throw wrongSecret }
        if let c = meta.wrappedAfterFirstUnlockKey {
            guard let classC = KeyWrap.unwrap(c, with: deviceKEK, name: "afterFirstUnlock") else { throw wrongSecret }
            afterFirstUnlockKey = classC
        } else {
            afterFirstUnlockKey = nil
        }
        if let w = meta.wrappedWhenUnlockedKey {
            guard let classA = KeyWrap.unwrap(w, with: deviceKEK, name: "whenUnlocked") else { throw wrongSecret }
            whenUnlockedKey = classA
        } else {
            whenUnlockedKey = nil
        }
        self.url = URL(fileURLWithPath: paths.root, isDirectory: true)
        self.entitlements = entitlements
        self.accessGroups = entitlements.accessGroups
        self.paths = paths
        self.directories = directories
        self.meta = meta
        self.isPasscodeSet = meta.passcode != nil
        self.deviceSecret = deviceSecret
        self.metadataKey = metadataKey
        // Fail now, not on the first read, when the state file is damaged.
        _ = try readState()
    }

    /// Where this keychain's device secret lives, as `keychain.meta` records it.
    public var deviceSecretLocation: DeviceSecretLocation { meta.deviceSecret }

    // MARK: Device state

    /// The emulated device's lock state, read from disk on every call (another process may
    /// have locked the device). With a passcode, a state whose class keys do not open with the
    /// current per-unlock keys (a `device-state` put back from an old copy) reads as the state
    /// those keys allow: `locked`, or `beforeFirstUnlock`.
    /// - Throws: `KeychainError` `.corrupt`, `.io`.
    public var deviceState: DeviceState {
        get throws { try readState().state }
    }

    /// Wrong passcodes in a row since the last right one (kept in `device-state`, sealed).
    /// - Throws: `KeychainError` `.corrupt`, `.io`.
    public var failedPasscodeAttempts: Int {
        get throws { Int(try readRecord().failedAttempts) }
    }

    /// Sets the lock state (all identities see it; it is the device's, not the caller's).
    ///
    /// With a passcode set, entering `unlocked`, or going from `beforeFirstUnlock` to `locked`,
    /// needs the passcode (this runs Argon2id once). Without a passcode `passcode` is ignored.
    /// Each wrong passcode is counted in `device-state`; after ``freePasscodeAttempts`` wrong ones
    /// in a row, attempts must wait ``passcodeDelaySeconds(afterFailures:)`` after the last one.
    /// - Parameters:
    ///   - state: the new state.
    ///   - passcode: the device passcode when one is needed.
    /// - Throws: `KeychainError` `.authFailed` (-25293) for a wrong or missing passcode,
    ///   `.passcodeBackoff` (too many wrong ones: the reason says how long to wait; the passcode
    ///   was not tried), `.corrupt`, `.io`.
    public func setDeviceState(_ state: DeviceState, passcode: String? = nil) throws {
        try setDeviceState(state, passcode: passcode, now: Int64(Date().timeIntervalSince1970))
    }

    /// ``setDeviceState(_:passcode:)`` at `now` (Unix seconds; tests give the clock).
    func setDeviceState(_ state: DeviceState, passcode: String?, now: Int64) throws {
        try Posix.withExclusiveLock(".lock", in: directories.root) {
            let record = try readRecord()
            let current = try session(record)
            guard let p = meta.passcode else {
                try writeState(StateRecord(state: state, boxA: nil, boxC: nil), unlockKeys: nil)
                return
            }
            let needsPasscode = state == .unlocked || (state == .locked && current.state == .beforeFirstUnlock)
            var classA: SecretBytes?
            var classC = current.classC
            var failed = record.failedAttempts
            var lastFailure = record.lastFailure
            if needsPasscode {
                guard let passcode else {
                    throw KeychainError(.authFailed, "the device has a passcode: give it to unlock")
                }
                let wait = Self.passcodeDelaySeconds(afterFailures: failed)
                if wait > 0, now < lastFailure + wait {
                    throw KeychainError(.passcodeBackoff,
                        "\(failed) wrong passcodes in a row: try again in \(lastFailure + wait - now) seconds",
                        suggestion: "wait, then give the passcode again; each further wrong one makes the wait longer (up to an hour)")
                }
                let kek = try KeyWrap.passcodeKEK(passcode: passcode, salt: p.salt, parameters: p.parameters, deviceSecret: deviceSecret)
                guard let a = KeyWrap.unwrap(p.wrappedWhenUnlockedKey, with: kek, name: KeyWrap.passcodeName(p.parameters)) else {
                    var counted = record
                    counted.failedAttempts = failed &+ 1
                    counted.lastFailure = now
                    try Posix.writeAtomically(try counted.encode(metadataKey: metadataKey), named: "device-state", in: directories.root, temp: directories.temp)
                    let next = Self.passcodeDelaySeconds(afterFailures: counted.failedAttempts)
                    throw KeychainError(.authFailed, "wrong passcode (\(counted.failedAttempts) in a row\(next > 0 ? "; the next try is allowed in \(next) seconds" : ""))")
                }
                classA = a
                if let boxC = p.wrappedAfterFirstUnlockKey {
                    guard let c = KeyWrap.unwrap(boxC, with: kek, name: KeyWrap.passcodeNameC(p.parameters)) else {
                        throw KeychainError(.corrupt, "\(paths.meta) is damaged: the afterFirstUnlock key does not open with the passcode that opens the whenUnlocked key")
                    }
                    if classC == nil { classC = c }
                }
                failed = 0
                lastFailure = 0
            }
            var next = StateRecord(state: state, boxA: nil, boxC: nil, failedAttempts: failed, lastFailure: lastFailure)
            var unlock = UnlockKeys()
            if state != .beforeFirstUnlock, meta.classCNeedsPasscode, let classC {
                // Class C stays under the same per-boot key from first unlock to the next reboot.
                let kept = current.state == .beforeFirstUnlock ? nil : current.unlockKeys?.classC
                let keyC = kept ?? SecretBytes(randomByteCount: UnlockKeys.keyByteCount)
                unlock.classC = keyC
                next.boxC = try KeyWrap.wrap(classC, with: try KeyWrap.sessionKEK(deviceSecret: deviceSecret, unlockKey: keyC, "C"), name: "session")
            }
            if state == .unlocked, let classA {
                let keyA = SecretBytes(randomByteCount: UnlockKeys.keyByteCount)
                unlock.classA = keyA
                next.boxA = try KeyWrap.wrap(classA, with: try KeyWrap.sessionKEK(deviceSecret: deviceSecret, unlockKey: keyA, "A"), name: "session")
            }
            try writeState(next, unlockKeys: (unlock.classA == nil && unlock.classC == nil) ? nil : unlock)
        }
    }

    /// Writes the per-unlock keys (or removes them: `nil`), then the state record. The keys of a
    /// replaced or removed file are gone, so every box under them is dead.
    private func writeState(_ record: StateRecord, unlockKeys: UnlockKeys?) throws {
        if let unlockKeys {
            var bytes = unlockKeys.encode()
            defer { SecretBytes.wipe(&bytes) }
            try Posix.writeAtomically(bytes, named: "unlock-keys", in: directories.root, temp: directories.temp)
        } else {
            try Posix.remove("unlock-keys", in: directories.root)
        }
        try Posix.writeAtomically(try record.encode(metadataKey: metadataKey), named: "device-state", in: directories.root, temp: directories.temp)
        cacheLock.lock()
        sessionCache.removeAll()
        cacheLock.unlock()
    }

    /// Locks the device (`locked`); `WhenUnlocked` items become unreadable (-25308).
    /// - Throws: as ``setDeviceState(_:passcode:)``.
    public func lock() throws { try setDeviceState(.locked) }

    /// Unlocks the device (`unlocked`).
    /// - Parameter passcode: the passcode, required when one is set.
    /// - Throws: `KeychainError` `.authFailed` for a wrong or missing passcode; as ``setDeviceState(_:passcode:)``.
    public func unlock(passcode: String? = nil) throws { try setDeviceState(.unlocked, passcode: passcode) }

    /// The device state as stored (sealed under the metadata key).
    func readRecord() throws -> StateRecord {
        guard let bytes = try Posix.readFile("device-state", in: directories.root, maxByteCount: 4096) else {
            throw KeychainError(.corrupt, "\(paths.state) is missing")
        }
        return try StateRecord.decode(bytes, path: paths.state, metadataKey: metadataKey)
    }

    /// The device state in effect and the class keys it makes readable.
    struct Session {
        var state: DeviceState
        var classA: SecretBytes?
        var classC: SecretBytes?
        var unlockKeys: UnlockKeys?
    }

    /// The state in effect: the stored one, lowered to what the per-unlock keys open.
    func readState() throws -> Session { try session(try readRecord()) }

    func session(_ record: StateRecord) throws -> Session {
        guard isPasscodeSet else {
            return Session(state: record.state, classA: whenUnlockedKey, classC: afterFirstUnlockKey, unlockKeys: nil)
        }
        var keys: UnlockKeys?
        if record.boxA != nil || record.boxC != nil, let bytes = try Posix.readFile("unlock-keys", in: directories.root, maxByteCount: 256) {
            keys = try UnlockKeys.decode(bytes, path: paths.unlockKeys)
        }
        let classA = try openBox(record.boxA, keys?.classA, "A")
        let classC = meta.classCNeedsPasscode ? try openBox(record.boxC, keys?.classC, "C") : afterFirstUnlockKey
        var state = record.state
        if state == .unlocked, classA == nil { state = .locked }
        if state == .locked, meta.classCNeedsPasscode, classC == nil { state = .beforeFirstUnlock }
        return Session(state: state, classA: state == .unlocked ? classA : nil, classC: state == .beforeFirstUnlock ? nil : classC, unlockKeys: keys)
    }

    /// The class key in a device-state box, or `nil` when there is no box or it does not open
    /// with the per-unlock key (an old box put back, or the key destroyed).
    private func openBox(_ box: [UInt8]?, _ unlockKey: SecretBytes?, _ label: String) throws -> SecretBytes? {
        guard let box, let unlockKey else { return nil }
        cacheLock.lock()
        defer { cacheLock.unlock() }
        if let hit = sessionCache.first(where: { $0.box == box && $0.unlockKey == unlockKey }) { return hit.key }
        guard let key = KeyWrap.unwrap(box, with: try KeyWrap.sessionKEK(deviceSecret: deviceSecret, unlockKey: unlockKey, label), name: "session") else {
            return nil
        }
        if sessionCache.count >= 4 { sessionCache.removeFirst() }
        sessionCache.append((box, unlockKey, key))
        return key
    }

    /// The key sealing items of `accessibility`, if the device state allows it.
    /// - Throws: `.interactionNotAllowed` (-25308), `.authFailed` (no passcode for
    ///   WhenPasscodeSet), `.corrupt`.
    func classKey(for accessibility: Accessibility, state: Session) throws -> SecretBytes {
        if accessibility == .whenPasscodeSetThisDeviceOnly, !isPasscodeSet {
            throw KeychainError(.authFailed, "whenPasscodeSetThisDeviceOnly items need a device passcode, and this device has none")
        }
        guard accessibility.isAvailable(in: state.state, passcodeSet: isPasscodeSet) else {
            throw KeychainError(.interactionNotAllowed,
                "\(Self.article(accessibility.rawValue)) \(accessibility) item is not accessible while the device is \(state.state == .locked ? "locked" : "before first unlock")")
        }
        let key: SecretBytes? = accessibility.protectionClass == .afterFirstUnlock ? state.classC : state.classA
        guard let key else {
            throw KeychainError(.interactionNotAllowed, "the device is not unlocked with its passcode")
        }
        return key
    }

    /// `a` or `an` for a word (by its first letter: the accessibility names are read as spelled).
    static func article(_ word: String) -> String {
        guard let first = word.first?.lowercased() else { return "a" }
        return "aeiou".contains(first) ? "an" : "a"
    }

    // MARK: App Group containers

    /// The shared container directory of an App Group (`containerURL(forSecurityApplicationGroupIdentifier:)`),
    /// created 0700 on first use. Every identity entitled to the group gets the same directory.
    /// - Parameter group: an application group, e.g. `group.com.example`.
    /// - Returns: `<keychain>/app-groups/<group>/`.
    /// - Throws: `KeychainError` `.missingEntitlement` (-34018) when `group` is not in the caller's
    ///   application groups, `.param` for a name that is not a safe path component, `.io`.
    public func appGroupContainer(for group: String) throws -> URL {
        guard entitlements.applicationGroups.contains(group) else {
            throw KeychainError(.missingEntitlement, "the caller is not entitled to application group \(group)")
        }
        try Self.validateGroupName(group)
        let container = try Posix.makeDirectory(group, in: directories.appGroups)
        return URL(fileURLWithPath: container.path, isDirectory: true)
    }

    static func validateGroupName(_ group: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        guard !group.isEmpty, group.utf8.count <= 255, !group.hasPrefix("."), group.allSatisfy({ allowed.contains($0) }) else {
            throw KeychainError(.param, "\"\(group)\" is not a valid group name (letters, digits, '.', '-', '_'; not starting with '.')")
        }
    }
}
