/// When a keychain item's secret data can be read, as `kSecAttrAccessible` on iOS
/// (Apple, "Restricting keychain item accessibility").
///
/// Raw values are the names used on the command line and in JSON (`whenUnlocked`, …).
public enum Accessibility: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `kSecAttrAccessibleWhenUnlocked`: only while the device is unlocked. The iOS default.
    case whenUnlocked
    /// `kSecAttrAccessibleAfterFirstUnlock`: after the first unlock since boot, also while locked.
    case afterFirstUnlock
    /// `kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly`: only while unlocked, and only on a
    /// device with a passcode (adding one without a passcode fails with `errSecAuthFailed`).
    case whenPasscodeSetThisDeviceOnly
    /// `kSecAttrAccessibleWhenUnlockedThisDeviceOnly`: as ``whenUnlocked``, never migrated.
    case whenUnlockedThisDeviceOnly
    /// `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`: as ``afterFirstUnlock``, never
    /// migrated. The `push-keys` default for push keys (an extension must read it while locked).
    case afterFirstUnlockThisDeviceOnly

    /// The iOS default, ``whenUnlocked``.
    public static let `default` = Accessibility.whenUnlocked

    /// Apple's constant name, e.g. `kSecAttrAccessibleWhenUnlocked`.
    public var constantName: String {
        switch self {
        case .whenUnlocked: "kSecAttrAccessibleWhenUnlocked"
        case .afterFirstUnlock: "kSecAttrAccessibleAfterFirstUnlock"
        case .whenPasscodeSetThisDeviceOnly: "kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly"
        case .whenUnlockedThisDeviceOnly: "kSecAttrAccessibleWhenUnlockedThisDeviceOnly"
        case .afterFirstUnlockThisDeviceOnly: "kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly"
        }
    }

    /// `true` for the `ThisDeviceOnly` variants: never restored from a backup onto another device (``KeychainBackup``).
    public var isThisDeviceOnly: Bool {
        switch self {
        case .whenUnlocked, .afterFirstUnlock: false
        case .whenPasscodeSetThisDeviceOnly, .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly: true
        }
    }

    /// `true` when the secret is readable while the device is locked (after first unlock).
    public var isAvailableWhileLocked: Bool {
        self == .afterFirstUnlock || self == .afterFirstUnlockThisDeviceOnly
    }

    /// `true` when the secret is readable in `state` (and, for ``whenPasscodeSetThisDeviceOnly``,
    /// the device has a passcode).
    /// - Parameters:
    ///   - state: the device lock state.
    ///   - passcodeSet: whether the device has a passcode.
    public func isAvailable(in state: DeviceState, passcodeSet: Bool) -> Bool {
        switch state {
        case .unlocked: self != .whenPasscodeSetThisDeviceOnly || passcodeSet
        case .locked: isAvailableWhileLocked
        case .beforeFirstUnlock: false
        }
    }

    /// The stored one-byte tag (1...5). Stable: part of the on-disk format.
    var storageTag: UInt8 {
        switch self {
        case .whenUnlocked: 1
        case .afterFirstUnlock: 2
        case .whenPasscodeSetThisDeviceOnly: 3
        case .whenUnlockedThisDeviceOnly: 4
        case .afterFirstUnlockThisDeviceOnly: 5
        }
    }

    init?(storageTag: UInt8) {
        switch storageTag {
        case 1: self = .whenUnlocked
        case 2: self = .afterFirstUnlock
        case 3: self = .whenPasscodeSetThisDeviceOnly
        case 4: self = .whenUnlockedThisDeviceOnly
        case 5: self = .afterFirstUnlockThisDeviceOnly
        default: return nil
        }
    }

    /// The protection class whose key seals items of this accessibility.
    var protectionClass: ProtectionClass {
        isAvailableWhileLocked ? .afterFirstUnlock : .whenUnlocked
    }

    /// The raw value, e.g. `whenUnlocked`.
    public var description: String { rawValue }
}

/// The data-protection class key that seals an item's secret (iOS class A / class C).
enum ProtectionClass: String, Sendable, CaseIterable {
    /// Class A ("complete"): WhenUnlocked, WhenUnlockedThisDeviceOnly, WhenPasscodeSetThisDeviceOnly.
    case whenUnlocked
    /// Class C ("until first user authentication"): AfterFirstUnlock and its ThisDeviceOnly variant.
    case afterFirstUnlock
}

/// A keychain item class, as `kSecClass`.
///
/// Both classes use the same attributes here. For ``key`` items, `service` plays the role of
/// `kSecAttrApplicationTag` and `account` of `kSecAttrApplicationLabel`; uniqueness is
/// (class, access group, service, account) for both.
public enum ItemClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `kSecClassGenericPassword`.
    case genericPassword
    /// `kSecClassKey`.
    case key

    /// The stored one-byte tag. Stable: part of the on-disk format.
    var storageTag: UInt8 { self == .genericPassword ? 1 : 2 }

    init?(storageTag: UInt8) {
        switch storageTag {
        case 1: self = .genericPassword
        case 2: self = .key
        default: return nil
        }
    }

    /// The raw value, e.g. `genericPassword`.
    public var description: String { rawValue }
}

/// The emulated device's lock state.
///
/// Transitions: ``unlocked`` ↔ ``locked``; any state → ``beforeFirstUnlock`` (a reboot). With a
/// passcode set, entering ``unlocked`` (and leaving ``beforeFirstUnlock``) needs the passcode.
public enum DeviceState: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Booted, never unlocked since: no item's secret is readable.
    case beforeFirstUnlock
    /// Unlocked: every accessibility class is readable.
    case unlocked
    /// Locked after a first unlock: only `AfterFirstUnlock` items are readable.
    case locked

    var storageTag: UInt8 {
        switch self {
        case .beforeFirstUnlock: 1
        case .unlocked: 2
        case .locked: 3
        }
    }

    init?(storageTag: UInt8) {
        switch storageTag {
        case 1: self = .beforeFirstUnlock
        case 2: self = .unlocked
        case 3: self = .locked
        default: return nil
        }
    }

    /// The raw value, e.g. `unlocked`.
    public var description: String { rawValue }
}
