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
/// `keychain.meta` (wrapped class keys, passcode parameters), `device-secret` (32 random bytes),
/// `device-state` (lock state), `items/` (one file per item, named by a hash of its primary key),
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
/// by `cacheLock`.
public final class Keychain: @unchecked Sendable {
    /// The keychain directory.
    public let url: URL
    /// The identity this instance acts as.
    public let entitlements: Entitlements
    /// `true` when the emulated device has a passcode.
    public let isPasscodeSet: Bool

    let paths: KeychainPaths
    let accessGroups: [String]
    private let deviceSecret: SecretBytes
    private let metadataKey: SecretBytes
    /// The metadata key (authenticates item headers and the device state; never leaves the module).
    var metadataKeyForRecords: SecretBytes { metadataKey }
    private let afterFirstUnlockKey: SecretBytes
    /// Class A key when no passcode is set (wrapped by the device secret alone).
    private let whenUnlockedKey: SecretBytes?
    private let sessionKEK: SecretBytes
    private let meta: KeychainMeta
    private let cacheLock = PosixLock()
    private var sessionCache: (box: [UInt8], key: SecretBytes)?

    // MARK: Create and open

    /// Creates a new keychain directory (0700) with a fresh device secret and class keys, in the
    /// `unlocked` state.
    /// - Parameters:
    ///   - url: the directory; created with its parents if absent; if present it must be empty.
    ///   - passcode: the emulated device passcode, or `nil` for none. With one, the class A
    ///     (`WhenUnlocked`) key is wrapped by device secret ‖ Argon2id(passcode).
    ///   - passcodeParameters: Argon2id cost (default libsodium "interactive", 2 passes, 64 MiB).
    /// - Throws: `KeychainError` `.alreadyExists` (`url` is already a keychain, a non-empty
    ///   directory, or a file),
    ///   `.insecurePermissions`, `.io`, `.param` (parameters out of range).
    public static func create(at url: URL, passcode: String? = nil, passcodeParameters: PasscodeParameters = .interactive) throws {
        let paths = KeychainPaths(root: url.standardizedFileURL.path)
        if let st = try Posix.status(paths.root) {
            if Posix.isSymbolicLink(st) { throw Posix.symbolicLinkError(paths.root, .alreadyExists) }
            guard Posix.isDirectory(st) else { throw KeychainError(.alreadyExists, "\(paths.root) exists and is not a directory") }
            let entries = try Posix.list(paths.root)
            if entries.contains("keychain.meta") { throw KeychainError(.alreadyExists, "\(paths.root) is already a keychain") }
            guard entries.isEmpty else { throw KeychainError(.alreadyExists, "\(paths.root) is not empty") }
            guard st.owner == UInt32(geteuid()) else { throw KeychainError(.insecurePermissions, "\(paths.root) is owned by another user") }
            guard chmod(paths.root, 0o700) == 0 else { throw Posix.ioError("chmod", paths.root) }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: paths.root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw KeychainError(.io, "cannot create directory \(paths.root)")
            }
            guard chmod(paths.root, 0o700) == 0 else { throw Posix.ioError("chmod", paths.root) }
        }
        for d in [paths.items, paths.temp, paths.appGroups] { try Posix.makeDirectory(d) }

        let deviceSecret = SecretBytes(randomByteCount: KeyWrap.deviceSecretByteCount)
        var secretCopy = deviceSecret.copyBytes()
        defer { SecretBytes.wipe(&secretCopy) }
        try Posix.createExclusive(paths.deviceSecret, secretCopy)

        let deviceKEK = try KeyWrap.kek(deviceSecret, "device-kek")
        let metadataKey = SecretBytes(randomByteCount: 32)
        let classC = SecretBytes(randomByteCount: 32)
        let classA = SecretBytes(randomByteCount: 32)
        var meta = KeychainMeta(wrappedMetadataKey: try KeyWrap.wrap(metadataKey, with: deviceKEK, name: "metadata"),
                                wrappedAfterFirstUnlockKey: try KeyWrap.wrap(classC, with: deviceKEK, name: "afterFirstUnlock"),
                                wrappedWhenUnlockedKey: nil, passcode: nil)
        var state = StateRecord(state: .unlocked, sessionBox: nil)
        if let passcode {
            let salt = SecureRandom.bytes(Argon2id.saltByteCount)
            let kek = try KeyWrap.passcodeKEK(passcode: passcode, salt: salt, parameters: passcodeParameters, deviceSecret: deviceSecret)
            meta.passcode = .init(salt: salt, parameters: passcodeParameters,
                                  wrappedWhenUnlockedKey: try KeyWrap.wrap(classA, with: kek, name: KeyWrap.passcodeName(passcodeParameters)))
            state.sessionBox = try KeyWrap.wrap(classA, with: try KeyWrap.kek(deviceSecret, "session-kek"), name: "session")
        } else {
            meta.wrappedWhenUnlockedKey = try KeyWrap.wrap(classA, with: deviceKEK, name: "whenUnlocked")
        }
        try Posix.createExclusive(paths.state, try state.encode(metadataKey: metadataKey))
        // keychain.meta last: its presence marks a complete keychain.
        try Posix.writeAtomically(try meta.encode(), to: paths.meta, directory: paths.root, tempDirectory: paths.temp)
    }

    /// Opens an existing keychain as `entitlements`.
    ///
    /// Checks ownership and modes (like ssh: group- or world-accessible is refused), reads the
    /// device secret and unwraps the class keys once (HKDF + AES-GCM; no Argon2id).
    /// - Parameters:
    ///   - url: the keychain directory.
    ///   - entitlements: the caller's identity.
    /// - Throws: `KeychainError` `.keychainMissing` (no directory or no `keychain.meta`; `url`
    ///   itself a symbolic link), `.symbolicLink` (a link inside the keychain), `.insecurePermissions`,
    ///   `.corrupt` (damaged files, wrong device secret), `.io`.
    public init(opening url: URL, as entitlements: Entitlements) throws {
        let paths = KeychainPaths(root: url.standardizedFileURL.path)
        guard let st = try Posix.status(paths.root) else { throw KeychainError(.keychainMissing, "no keychain at \(paths.root)") }
        if Posix.isSymbolicLink(st) { throw Posix.symbolicLinkError(paths.root, .keychainMissing) }
        guard Posix.isDirectory(st) else { throw KeychainError(.keychainMissing, "\(paths.root) is not a directory") }
        try Posix.checkOwnership(st, paths.root)
        guard let metaBytes = try Posix.readFile(paths.meta, maxByteCount: 64 << 10) else {
            if try Posix.list(paths.root).isEmpty { throw KeychainError(.keychainMissing, "\(paths.root) is not a keychain (empty directory)") }
            throw KeychainError(.keychainMissing, "\(paths.root) is not a keychain (no keychain.meta)")
        }
        let meta = try KeychainMeta.decode(metaBytes, path: paths.meta)
        guard var secretBytes = try Posix.readFile(paths.deviceSecret, maxByteCount: 1024) else {
            throw KeychainError(.corrupt, "\(paths.deviceSecret) is missing")
        }
        defer { SecretBytes.wipe(&secretBytes) }
        guard secretBytes.count == KeyWrap.deviceSecretByteCount else {
            throw KeychainError(.corrupt, "\(paths.deviceSecret) is \(secretBytes.count) bytes, expected \(KeyWrap.deviceSecretByteCount)")
        }
        for d in [paths.items, paths.temp, paths.appGroups] {
            guard try Posix.checkDirectory(d) else { throw KeychainError(.corrupt, "\(d) is missing") }
        }
        // The writers' lock file is opened only by writers; check it at every open, as item files are read.
        try Posix.checkPrivateFile(paths.lock)
        let deviceSecret = SecretBytes(copying: secretBytes)
        let deviceKEK = try KeyWrap.kek(deviceSecret, "device-kek")
        let wrongSecret = KeychainError(.corrupt,
            "the device secret does not unwrap the class keys of \(paths.meta) (wrong or replaced device-secret, or a modified keychain.meta)")
        guard let metadataKey = KeyWrap.unwrap(meta.wrappedMetadataKey, with: deviceKEK, name: "metadata"),
              let classC = KeyWrap.unwrap(meta.wrappedAfterFirstUnlockKey, with: deviceKEK, name: "afterFirstUnlock")
        else { throw wrongSecret }
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
        self.meta = meta
        self.isPasscodeSet = meta.passcode != nil
        self.deviceSecret = deviceSecret
        self.metadataKey = metadataKey
        self.afterFirstUnlockKey = classC
        self.sessionKEK = try KeyWrap.kek(deviceSecret, "session-kek")
        // Fail now, not on the first read, when the state file is damaged.
        _ = try readState()
    }

    // MARK: Device state

    /// The emulated device's lock state, read from disk on every call (another process may
    /// have locked the device).
    /// - Throws: `KeychainError` `.corrupt`, `.io`.
    public var deviceState: DeviceState {
        get throws { try readState().state }
    }

    /// Sets the lock state (all identities see it; it is the device's, not the caller's).
    ///
    /// With a passcode set, entering `unlocked`, or going from `beforeFirstUnlock` to `locked`,
    /// needs the passcode (this runs Argon2id once). Without a passcode `passcode` is ignored.
    /// - Parameters:
    ///   - state: the new state.
    ///   - passcode: the device passcode when one is needed.
    /// - Throws: `KeychainError` `.authFailed` (-25293) for a wrong or missing passcode, `.corrupt`, `.io`.
    public func setDeviceState(_ state: DeviceState, passcode: String? = nil) throws {
        try Posix.withExclusiveLock(paths.lock) {
            let current = try readState()
            var next = StateRecord(state: state, sessionBox: nil)
            if let p = meta.passcode {
                let needsPasscode = state == .unlocked || (state == .locked && current.state == .beforeFirstUnlock)
                if needsPasscode {
                    guard let passcode else {
                        throw KeychainError(.authFailed, "the device has a passcode: give it to unlock")
                    }
                    let kek = try KeyWrap.passcodeKEK(passcode: passcode, salt: p.salt, parameters: p.parameters, deviceSecret: deviceSecret)
                    guard let classA = KeyWrap.unwrap(p.wrappedWhenUnlockedKey, with: kek, name: KeyWrap.passcodeName(p.parameters)) else {
                        throw KeychainError(.authFailed, "wrong passcode")
                    }
                    if state == .unlocked {
                        next.sessionBox = try KeyWrap.wrap(classA, with: sessionKEK, name: "session")
                    }
                } else if state == .locked, current.state == .locked {
                    next.sessionBox = nil
                }
            }
            try Posix.writeAtomically(try next.encode(metadataKey: metadataKey), to: paths.state, directory: paths.root, tempDirectory: paths.temp)
        }
    }

    /// Locks the device (`locked`); `WhenUnlocked` items become unreadable (-25308).
    /// - Throws: as ``setDeviceState(_:passcode:)``.
    public func lock() throws { try setDeviceState(.locked) }

    /// Unlocks the device (`unlocked`).
    /// - Parameter passcode: the passcode, required when one is set.
    /// - Throws: `KeychainError` `.authFailed` for a wrong or missing passcode; as ``setDeviceState(_:passcode:)``.
    public func unlock(passcode: String? = nil) throws { try setDeviceState(.unlocked, passcode: passcode) }

    func readState() throws -> StateRecord {
        guard let bytes = try Posix.readFile(paths.state, maxByteCount: 4096) else {
            throw KeychainError(.corrupt, "\(paths.state) is missing")
        }
        return try StateRecord.decode(bytes, path: paths.state, metadataKey: metadataKey)
    }

    /// The key sealing items of `accessibility`, if the device state allows it.
    /// - Throws: `.interactionNotAllowed` (-25308), `.authFailed` (no passcode for
    ///   WhenPasscodeSet), `.corrupt`.
    func classKey(for accessibility: Accessibility, state: StateRecord) throws -> SecretBytes {
        if accessibility == .whenPasscodeSetThisDeviceOnly, !isPasscodeSet {
            throw KeychainError(.authFailed, "whenPasscodeSetThisDeviceOnly items need a device passcode, and this device has none")
        }
        guard accessibility.isAvailable(in: state.state, passcodeSet: isPasscodeSet) else {
            throw KeychainError(.interactionNotAllowed,
                "\(Self.article(accessibility.rawValue)) \(accessibility) item is not accessible while the device is \(state.state == .locked ? "locked" : "before first unlock")")
        }
        switch accessibility.protectionClass {
        case .afterFirstUnlock:
            return afterFirstUnlockKey
        case .whenUnlocked:
            if let whenUnlockedKey { return whenUnlockedKey }
            guard let box = state.sessionBox else {
                throw KeychainError(.interactionNotAllowed, "the device is not unlocked with its passcode")
            }
            return try cacheLock.withLock {
                if let cached = sessionCache, cached.box == box { return cached.key }
                guard let key = KeyWrap.unwrap(box, with: sessionKEK, name: "session") else {
                    throw KeychainError(.corrupt, "\(paths.state) holds a session key that does not authenticate")
                }
                sessionCache = (box, key)
                return key
            }
        }
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
        let path = paths.appGroups + "/" + group
        try Posix.makeDirectory(path)
        return URL(fileURLWithPath: path, isDirectory: true)
    }

    static func validateGroupName(_ group: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
        guard !group.isEmpty, group.utf8.count <= 255, !group.hasPrefix("."), group.allSatisfy({ allowed.contains($0) }) else {
            throw KeychainError(.param, "\"\(group)\" is not a valid group name (letters, digits, '.', '-', '_'; not starting with '.')")
        }
    }
}
