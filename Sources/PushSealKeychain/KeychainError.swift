import PushSealCrypto
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
public struct KeychainError: CodedError {
    /// A stable, machine-readable error code, with the OSStatus it stands for (if any).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name, e.g. `itemNotFound`.
        public let name: String
        /// The Keychain Services OSStatus number (Security/SecBase.h), or `nil` for store errors.
        public let osStatus: Int32?
        /// Apple's constant name for ``osStatus`` (e.g. `errSecItemNotFound`), or `nil`.
        public let statusName: String?

        init(_ name: String, _ osStatus: Int32? = nil, _ statusName: String? = nil) {
            self.name = name
            self.osStatus = osStatus
            self.statusName = statusName
        }

        /// `errSecItemNotFound` (-25300): no item matched the query (in the caller's access groups).
        public static let itemNotFound = Code("itemNotFound", -25300, "errSecItemNotFound")
        /// `errSecDuplicateItem` (-25299): an item with the same primary key (class, access group,
        /// service, account) exists; nothing was changed.
        public static let duplicateItem = Code("duplicateItem", -25299, "errSecDuplicateItem")
        /// `errSecInteractionNotAllowed` (-25308): the item's accessibility class is not available
        /// in the current device state (e.g. a `WhenUnlocked` item while locked).
        public static let interactionNotAllowed = Code("interactionNotAllowed", -25308, "errSecInteractionNotAllowed")
        /// `errSecMissingEntitlement` (-34018): the caller is not entitled to the access group
        /// (or App Group) it named.
        public static let missingEntitlement = Code("missingEntitlement", -34018, "errSecMissingEntitlement")
        /// `errSecParam` (-50): an invalid attribute or query (empty service, bad name, …).
        public static let param = Code("param", -50, "errSecParam")
        /// `errSecDecode` (-26275): data given to the keychain could not be decoded.
        public static let decode = Code("decode", -26275, "errSecDecode")
        /// `errSecAuthFailed` (-25293): wrong passcode, or a `WhenPasscodeSetThisDeviceOnly` item
        /// on a device without a passcode.
        public static let authFailed = Code("authFailed", -25293, "errSecAuthFailed")

        /// No keychain at the path (directory or its `keychain.meta` missing). No OSStatus.
        public static let keychainMissing = Code("keychainMissing")
        /// `create` found something already at the path. No OSStatus.
        public static let alreadyExists = Code("alreadyExists")
        /// The keychain directory or a file in it is group- or world-accessible or owned by another
        /// user (refused, like ssh does). No OSStatus.
        public static let insecurePermissions = Code("insecurePermissions")
        /// A stored file is malformed, truncated, fails authentication (bit flip, swapped
        /// ciphertext) or does not unwrap with this device secret. Never reported as empty. No OSStatus.
        public static let corrupt = Code("corrupt")
        /// A system call failed (disk full, permission denied by the OS, …); `reason` names it. No OSStatus.
        public static let io = Code("io")
        /// A file or directory inside the keychain directory (`items/`, an item file, `tmp/`,
        /// `keychain.meta`, `.lock`, a lock or log file of another module, …) is a symbolic link:
        /// links inside a keychain are refused, never followed. The keychain directory itself given
        /// as a link is `.keychainMissing` (open) or `.alreadyExists` (create). No OSStatus.
        public static let symbolicLink = Code("symbolicLink")

        /// `name`, or `name: errSecX (N)` when an OSStatus exists.
        public var description: String {
            if let osStatus, let statusName { return "\(name): \(statusName) (\(osStatus))" }
            return name
        }
    }

    /// The stable code; equality and hashing use it alone.
    public let code: Code
    /// A human explanation, lower case, without secrets.
    public let reason: String
    /// What the user can do about it, when the store knows exactly, e.g.
    /// `chmod 600 /kc/items/….item` for a group-readable item file (paths shell-quoted when
    /// needed); `nil` otherwise. The tools print it as their `hint:` line.
    public let suggestion: String?

    /// Creates an error with a stable `code`, a human `reason` (no secrets) and, when the fix is
    /// known exactly, a `suggestion`.
    public init(_ code: Code, _ reason: String, suggestion: String? = nil) {
        self.code = code
        self.reason = reason
        self.suggestion = suggestion
    }

    /// The OSStatus number (e.g. -25308), or `nil` for store errors.
    public var osStatus: Int32? { code.osStatus }
    /// Apple's name for ``osStatus`` (e.g. `errSecInteractionNotAllowed`), or `nil`.
    public var statusName: String? { code.statusName }

    /// `reason`, followed by `: errSecX (N)` when an OSStatus exists, e.g.
    /// `item is not accessible while the device is locked: errSecInteractionNotAllowed (-25308)`.
    public var description: String {
        if let osStatus, let statusName { return "\(reason): \(statusName) (\(osStatus))" }
        return reason
    }
}
