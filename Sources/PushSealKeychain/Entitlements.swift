#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif
import PushSealJSON

/// The identity a process reads the keychain as: the entitlements an iOS app or its
/// Notification Service Extension is signed with.
///
/// ``accessGroups`` is in iOS order — every `keychain-access-groups` entry, then the
/// `application-identifier`, then every `com.apple.security.application-groups` entry
/// (duplicates dropped, first occurrence kept). An add without an access group stores the item in
/// the first; a query without one searches them all. (Apple, "Sharing access to keychain items
/// among a collection of apps".)
public struct Entitlements: Sendable, Hashable {
    /// `application-identifier`, `TEAMID.bundle.id` (e.g. `ABCDE12345.com.example.app`), or `nil`.
    public var applicationIdentifier: String?
    /// `keychain-access-groups`, e.g. `["ABCDE12345.com.example.shared"]`.
    public var keychainAccessGroups: [String]
    /// `com.apple.security.application-groups`, e.g. `["group.com.example"]`. Each is also a
    /// keychain access group and names an App Group container.
    public var applicationGroups: [String]

    /// Creates an identity.
    /// - Parameters:
    ///   - applicationIdentifier: `TEAMID.bundle.id`, or `nil`.
    ///   - keychainAccessGroups: the `keychain-access-groups` entitlement.
    ///   - applicationGroups: the `com.apple.security.application-groups` entitlement.
    public init(applicationIdentifier: String? = nil, keychainAccessGroups: [String] = [], applicationGroups: [String] = []) {
        self.applicationIdentifier = applicationIdentifier
        self.keychainAccessGroups = keychainAccessGroups
        self.applicationGroups = applicationGroups
    }

    /// The access groups in iOS order: keychain-access-groups, application-identifier,
    /// application-groups; duplicates removed. Empty means the caller can reach no item.
    public var accessGroups: [String] {
        var seen = Set<String>()
        var out: [String] = []
        for g in keychainAccessGroups + (applicationIdentifier.map { [$0] } ?? []) + applicationGroups where seen.insert(g).inserted {
            out.append(g)
        }
        return out
    }

    /// Reads entitlements from a JSON object or a property list (XML or binary `.entitlements`).
    ///
    /// Keys: `application-identifier` (string), `keychain-access-groups` (array of strings),
    /// `application-groups` or `com.apple.security.application-groups` (array of strings);
    /// other keys are ignored.
    /// - Parameter url: the file.
    /// - Throws: `KeychainError` `.keychainMissing` when the file does not exist, `.io` when it cannot
    ///   be read, `.decode` when it is neither a JSON object nor a property-list dictionary or a key
    ///   has the wrong type.
    public static func load(from url: URL) throws -> Entitlements {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            if !FileManager.default.fileExists(atPath: url.path) {
                throw KeychainError(.keychainMissing, "entitlements file \(url.path) does not exist")
            }
            throw KeychainError(.io, "cannot read entitlements file \(url.path)")
        }
        return try decode(data, source: url.path)
    }

    /// Decodes entitlements from JSON or property-list bytes (see ``load(from:)``).
    /// - Parameters:
    ///   - data: the file's bytes.
    ///   - source: a name for error messages.
    /// - Throws: `KeychainError` `.decode`.
    public static func decode(_ data: Data, source: String = "entitlements") throws -> Entitlements {
        let first = data.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) })
        let entries: [String: Entry]
        if first == UInt8(ascii: "{") {
            guard let object = (try? JSONReader.parse([UInt8](data)))?.objectValue else {
                throw KeychainError(.decode, "\(source) is not a JSON object or property-list dictionary")
            }
            var d: [String: Entry] = [:]
            for (key, value) in object {
                switch value {
                case .string(let s): d[key] = .string(s)
                case .array(let a): d[key] = .array(a.map { $0.stringValue })
                default: d[key] = .other
                }
            }
            entries = d
        } else {
            // PropertyListDecoder is in FoundationEssentials (PropertyListSerialization is not).
            guard let decoded = try? PropertyListDecoder().decode([String: Entry].self, from: data) else {
                throw KeychainError(.decode, "\(source) is not a JSON object or property-list dictionary")
            }
            entries = decoded
        }
        func strings(_ key: String) throws -> [String]? {
            guard let v = entries[key] else { return nil }
            guard case .array(let a) = v else { throw KeychainError(.decode, "\(source): \(key) must be an array of strings") }
            return try a.map {
                guard let s = $0, !s.isEmpty else { throw KeychainError(.decode, "\(source): \(key) must be an array of non-empty strings") }
                return s
            }
        }
        var e = Entitlements()
        if let v = entries["application-identifier"] {
            guard case .string(let s) = v, !s.isEmpty else { throw KeychainError(.decode, "\(source): application-identifier must be a non-empty string") }
            e.applicationIdentifier = s
        }
        e.keychainAccessGroups = try strings("keychain-access-groups") ?? []
        e.applicationGroups = try (strings("com.apple.security.application-groups") ?? []) + (strings("application-groups") ?? [])
        // Every group is an item attribute (kept with a 16-bit length): the keychain's limit.
        for g in e.accessGroups where g.utf8.count > ItemRecord.maxStringByteCount {
            throw KeychainError(.decode, "\(source): an access group or application identifier is longer than \(ItemRecord.maxStringByteCount) bytes")
        }
        return e
    }
}

/// One entitlement's value as far as the keychain cares: a string, an array (string elements,
/// `nil` for any other element), or anything else.
private enum Entry: Decodable {
    case string(String)
    case array([String?])
    case other

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([Lossy].self) {
            self = .array(a.map(\.string))
        } else {
            self = .other
        }
    }

    /// An array element: its string, or `nil` for any other type.
    struct Lossy: Decodable {
        let string: String?
        init(from decoder: any Decoder) throws {
            string = try? decoder.singleValueContainer().decode(String.self)
        }
    }
}
