#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
public import PushSealCrypto

/// A keychain item's attributes (never its secret), as `kSecReturnAttributes` gives them.
public struct ItemAttributes: Sendable, Hashable {
    /// `kSecClass`.
    public var itemClass: ItemClass
    /// `kSecAttrService` (for ``ItemClass/key``: the application tag). Non-empty.
    public var service: String
    /// `kSecAttrAccount` (for ``ItemClass/key``: the application label). Non-empty.
    public var account: String
    /// `kSecAttrLabel`, a human label, or `nil`.
    public var label: String?
    /// `kSecAttrAccessGroup`: the access group the item is stored in.
    public var accessGroup: String
    /// `kSecAttrAccessible`.
    public var accessibility: Accessibility
    /// `kSecAttrCreationDate` (microsecond precision, UTC).
    public var creationDate: Date
    /// `kSecAttrModificationDate` (microsecond precision, UTC); bumped by every update.
    public var modificationDate: Date

    /// Creates attributes (all fields as above).
    public init(itemClass: ItemClass, service: String, account: String, label: String?, accessGroup: String,
                accessibility: Accessibility, creationDate: Date, modificationDate: Date) {
        self.itemClass = itemClass
        self.service = service
        self.account = account
        self.label = label
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.creationDate = creationDate
        self.modificationDate = modificationDate
    }
}

/// One result of ``Keychain/copyMatching(_:limit:returning:)``.
public struct KeychainItem: Sendable {
    /// The item's attributes (always filled: a lookup decodes them anyway).
    public var attributes: ItemAttributes
    /// The secret data when ``ReturnOptions/data`` was asked for, else `nil`.
    public var data: SecretBytes?

    /// Creates a result.
    public init(attributes: ItemAttributes, data: SecretBytes?) {
        self.attributes = attributes
        self.data = data
    }
}

/// A search, as the query dictionary of `SecItemCopyMatching`, `SecItemUpdate` and `SecItemDelete`.
/// A `nil` attribute matches anything; a `nil` ``accessGroup`` searches every access group of the
/// caller, in ``Entitlements/accessGroups`` order.
public struct ItemQuery: Sendable, Hashable {
    /// `kSecClass` (required, as on iOS).
    public var itemClass: ItemClass
    /// `kSecAttrService`, or `nil` for any.
    public var service: String?
    /// `kSecAttrAccount`, or `nil` for any.
    public var account: String?
    /// `kSecAttrAccessGroup`, or `nil` for all of the caller's groups. Naming a group the caller
    /// is not entitled to fails with `errSecMissingEntitlement` (-34018).
    public var accessGroup: String?
    /// `kSecAttrLabel`, or `nil` for any.
    public var label: String?

    /// Creates a query.
    public init(itemClass: ItemClass = .genericPassword, service: String? = nil, account: String? = nil,
                accessGroup: String? = nil, label: String? = nil) {
        self.itemClass = itemClass
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        self.label = label
    }
}

/// `kSecMatchLimit`: how many items a search returns.
public enum MatchLimit: Sendable, Hashable {
    /// `kSecMatchLimitOne`: the first match (caller's group order, then oldest first).
    case one
    /// `kSecMatchLimitAll`: every match (caller's group order, then oldest first).
    case all
}

/// `kSecReturnData` / `kSecReturnAttributes`.
public struct ReturnOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: UInt8
    /// Creates options from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `kSecReturnData`: decrypt and return the secret (needs the item's class key: device state matters).
    public static let data = ReturnOptions(rawValue: 1)
    /// `kSecReturnAttributes`: attributes only, never decrypts; works in any device state.
    public static let attributes = ReturnOptions(rawValue: 2)
}

/// The attributes to change, as the second dictionary of `SecItemUpdate`. `nil` leaves a field
/// as it is. The modification date is always bumped.
public struct ItemChanges: Sendable {
    /// New `kSecAttrService`.
    public var service: String?
    /// New `kSecAttrAccount`.
    public var account: String?
    /// New `kSecAttrLabel` (`.some(nil)` removes the label).
    public var label: String??
    /// New `kSecAttrAccessGroup` (must be one of the caller's groups).
    public var accessGroup: String?
    /// New `kSecAttrAccessible`.
    public var accessibility: Accessibility?
    /// New `kSecValueData`.
    public var data: SecretBytes?

    /// Creates a change set; every parameter defaults to "unchanged".
    public init(service: String? = nil, account: String? = nil, label: String?? = nil, accessGroup: String? = nil,
                accessibility: Accessibility? = nil, data: SecretBytes? = nil) {
        self.service = service
        self.account = account
        self.label = label
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.data = data
    }
}
