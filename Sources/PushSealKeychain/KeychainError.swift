public import PushSealSystem
/// An error from the keychain emulation.
///
/// Item errors carry the real Keychain Services `OSStatus` number and its Apple name
/// (`errSecItemNotFound (-25300)`), exactly as `SecItemAdd`, `SecItemCopyMatching`,
/// `SecItemUpdate` and `SecItemDelete` report them on iOS, so a bug found on Linux reads the same
/// as on a phone. Errors of the store itself (missing directory, unsafe permissions, a damaged
/// file, an I/O failure) have no OSStatus: ``osStatus`` is `nil`.
///
/// Compare errors by ``code``; the human ``reason`` may change, codes will not. Reasons never
/// contain secret data or key bytes. No error is ever turned into "not found".
public typealias KeychainError = DomainError<KeychainErrorDomain>

/// The domain of ``KeychainError``: `keychain`; its codes stand for OSStatus numbers
/// (``StatusErrorDomain``), so a keychain error is a `StatusCodedError`: `osStatus` (e.g.
/// -25308, `nil` for store errors), `statusName` (`errSecInteractionNotAllowed`) and
/// `suggestion`, e.g. `chmod 600 /kc/items/….item` for a group-readable item file (paths
/// shell-quoted when needed), which the tools print as their `hint:` line.
public enum KeychainErrorDomain: StatusErrorDomain {
    /// `keychain`.
    public static let name = "keychain"

    /// The OSStatus number and Apple name `code` stands for, or `nil` for store errors.
    public static func status(of code: ErrorCode<KeychainError>) -> (number: Int32, name: String)? {
        keychainStatuses[code.name]
    }

    /// `reason`, followed by `: errSecX (N)` when an OSStatus exists, e.g.
    /// `item is not accessible while the device is locked: errSecInteractionNotAllowed (-25308)`.
    public static func describe(_ error: KeychainError) -> String {
        if let osStatus = error.osStatus, let statusName = error.statusName { return "\(error.reason): \(statusName) (\(osStatus))" }
        return error.reason
    }
}

extension ErrorCode<KeychainError> {
    /// `errSecItemNotFound` (-25300): no item matched the query (in the caller's access groups).
    public static var itemNotFound: Self { Self("itemNotFound") }
    /// `errSecDuplicateItem` (-25299): an item with the same primary key (class, access group,
    /// service, account) exists; nothing was changed.
    public static var duplicateItem: Self { Self("duplicateItem") }
    /// `errSecInteractionNotAllowed` (-25308): the item's accessibility class is not available
    /// in the current device state (e.g. a `WhenUnlocked` item while locked).
    public static var interactionNotAllowed: Self { Self("interactionNotAllowed") }
    /// `errSecMissingEntitlement` (-34018): the caller is not entitled to the access group
    /// (or App Group) it named.
    public static var missingEntitlement: Self { Self("missingEntitlement") }
    /// `errSecParam` (-50): an invalid attribute or query (empty service, bad name, …).
    public static var param: Self { Self("param") }
    /// `errSecDecode` (-26275): data given to the keychain could not be decoded.
    public static var decode: Self { Self("decode") }
    /// `errSecAuthFailed` (-25293): wrong passcode, or a `WhenPasscodeSetThisDeviceOnly` item
    /// on a device without a passcode.
    public static var authFailed: Self { Self("authFailed") }
    /// No keychain at the path (directory or its `keychain.meta` missing). No OSStatus.
    public static var keychainMissing: Self { Self("keychainMissing") }
    /// `create` found something already at the path. No OSStatus.
    public static var alreadyExists: Self { Self("alreadyExists") }
    /// The keychain directory or a file in it is group- or world-accessible or owned by another
    /// user (refused, like ssh does). No OSStatus.
    public static var insecurePermissions: Self { Self("insecurePermissions") }
    /// A stored file is malformed, truncated, fails authentication (bit flip, swapped
    /// ciphertext) or does not unwrap with this device secret. Never reported as empty. No OSStatus.
    public static var corrupt: Self { Self("corrupt") }
    /// A system call failed (permission denied by the OS, a read error, …); `reason` names it. No OSStatus.
    public static var io: Self { Self("io") }
    /// `errSecDiskFull` (-34): a write failed because the file system is full (ENOSPC) or the
    /// user's quota is used up (EDQUOT); nothing was changed (writes are atomic). Free space
    /// and retry. Reads still work.
    public static var diskFull: Self { Self("diskFull") }
    /// A file or directory inside the keychain directory (`items/`, an item file, `tmp/`,
    /// `keychain.meta`, `.lock`, a lock or log file of another module, …) is a symbolic link:
    /// links inside a keychain are refused, never followed. The keychain directory itself given
    /// as a link is `.keychainMissing` (open) or `.alreadyExists` (create). No OSStatus.
    public static var symbolicLink: Self { Self("symbolicLink") }
    /// The keychain's device secret is not where `keychain.meta` (or
    /// `PUSHSEAL_DEVICE_SECRET_FILE`) says it is — e.g. a keychain directory copied without
    /// its secret. Nothing in the keychain can be read without it. No OSStatus.
    public static var deviceSecretMissing: Self { Self("deviceSecretMissing") }
    /// Too many wrong passcodes in a row: the next attempt must wait (the reason says how
    /// long); the passcode given was not tried. No OSStatus.
    public static var passcodeBackoff: Self { Self("passcodeBackoff") }

    /// The Keychain Services OSStatus number (Security/SecBase.h), or `nil` for store errors.
    public var osStatus: Int32? { keychainStatuses[name]?.number }
    /// Apple's constant name for ``osStatus`` (e.g. `errSecItemNotFound`), or `nil`.
    public var statusName: String? { keychainStatuses[name]?.name }
}

/// The OSStatus of each item error code, by code name (Security/SecBase.h).
private let keychainStatuses: [String: (number: Int32, name: String)] = [
    "itemNotFound": (-25300, "errSecItemNotFound"),
    "duplicateItem": (-25299, "errSecDuplicateItem"),
    "interactionNotAllowed": (-25308, "errSecInteractionNotAllowed"),
    "missingEntitlement": (-34018, "errSecMissingEntitlement"),
    "param": (-50, "errSecParam"),
    "decode": (-26275, "errSecDecode"),
    "authFailed": (-25293, "errSecAuthFailed"),
    "diskFull": (-34, "errSecDiskFull"),
]

// Re-exported so that code importing only this module reads the error's `code`, `reason` and
// `suggestion` (their declarations live in PushSealSystem; MemberImportVisibility).
@_exported public import struct PushSealSystem.DomainError
