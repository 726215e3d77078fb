import PushSealCrypto
import PushSealSystem

/// One value of a row as a ``RegistryRowMAC`` authenticates it: the row's columns in a fixed
/// order, each typed (so `NULL`, `""` and an empty `bytea` differ, and a text never reads as an
/// integer).
public enum RegistryRowField: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A `text` column (UTF-8).
    case text(String)
    /// A `bytea` column.
    case bytes([UInt8])
    /// A `bigint`/`integer`/`smallint` column.
    case int(Int64)

    /// `nil` as ``null``, else ``text(_:)``.
    public static func text(_ s: String?) -> Self { s.map { .text($0) } ?? .null }
    /// `nil` as ``null``, else ``int(_:)``.
    public static func int(_ v: Int64?) -> Self { v.map { .int($0) } ?? .null }
    /// `nil` as ``null``, else ``bytes(_:)``.
    public static func bytes(_ b: [UInt8]?) -> Self { b.map { .bytes($0) } ?? .null }
}

/// Authenticates the rows of one registry table (security review G1): an HMAC-SHA256 tag over a
/// row's identity and content, under a key derived from the registry's ``KeyEncryptionKey`` with
/// HKDF-SHA256 (salt ``hkdfSalt``, info ``hkdfInfoPrefix`` ‖ the table name), so a tag made for
/// one table never verifies in another and nobody without the KEK can make one. The tag lives in
/// the row (a `row_mac bytea` column, ``byteCount`` bytes); a reader recomputes it from the
/// columns it read and refuses the row when it differs (`RegistryError` `.corrupt`, naming the
/// table and the row's key).
///
/// **What to put in ``tag(_:)``'s fields.** Every column that decides where text goes or whom a
/// phone trusts, the primary key columns first, in one fixed order per table (changing the order
/// or the set later is a new table label, e.g. `pushseal_outbox/v2`): a row moved to another key
/// (another recipient, app or token) or with one column changed fails. Columns a database role
/// may legitimately change without the KEK (counters, lease times) stay out. To tie rows to the
/// state of a list (so an old row put back fails), include the list's version.
///
/// **Use from another table** (the gateway's outbox, API keys; the sender-key staging tables):
/// ```swift
/// let mac = try kek.rowMAC(table: "pushseal_outbox")          // or store.rowMAC(table:)
/// let fields: [RegistryRowField] = [.text(appID), .int(id), .text(token), .bytes(payload)]
/// insert(..., rowMAC: try mac.tag(fields))
/// try mac.verify(storedTag, fields, row: "\(appID)/\(id)")  // .corrupt when it differs
/// ```
///
/// Encoding (``encode(_:)``): per field one type byte (0 null, 1 text, 2 bytes, 3 integer), then
/// for text and bytes a 4-byte big-endian length and the bytes, for an integer its 8 bytes
/// big-endian; the fields concatenated. Unambiguous, so two different rows never share a message.
/// Sendable: immutable.
public struct RegistryRowMAC: Sendable {
    /// Bytes of a tag (the `row_mac` column): 32.
    public static let byteCount = HMACSHA256.byteCount
    /// HKDF salt of every row key.
    public static let hkdfSalt = Array("pushseal-registry-row-mac-salt-v1".utf8)
    /// HKDF info prefix; the table label follows.
    public static let hkdfInfoPrefix = "pushseal-registry-row-mac-v1|"
    /// The name of the column holding the tag in every authenticated table.
    public static let columnName = "row_mac"

    /// The table label the key was derived for (`pushseal_registrations`, …).
    public let table: String
    let key: SecretBytes

    /// Derives the row key of `table` from `kek`.
    /// - Parameters:
    ///   - kek: the registry's key-encryption key.
    ///   - table: the table's label (its name, or name and layout version); not empty.
    /// - Throws: `CryptoError` `.internalFailure` (OpenSSL).
    public init(kek: KeyEncryptionKey, table: String) throws {
        self.table = table
        key = try HKDFSHA256.deriveKey(inputKeyMaterial: kek.key, salt: Self.hkdfSalt, info: Array((Self.hkdfInfoPrefix + table).utf8),
                                       outputByteCount: 32)
    }

    /// The tag of a row: HMAC-SHA256 over ``encode(_:)`` of `fields` (``byteCount`` bytes).
    /// - Throws: `CryptoError` `.internalFailure` (OpenSSL).
    public func tag(_ fields: [RegistryRowField]) throws -> [UInt8] {
        try HMACSHA256.authenticate(Self.encode(fields), key: key)
    }

    /// Checks a stored tag against the row's fields (constant-time comparison).
    /// - Parameters:
    ///   - stored: the `row_mac` column as read (`nil` for NULL: a row never authenticated).
    ///   - fields: the row's fields, as given to ``tag(_:)`` when it was written.
    ///   - row: the row's key for the message (`app/recipient/key id`): never secret bytes.
    /// - Throws: `RegistryError` `.corrupt` ("the pushseal_… row … fails its authentication …")
    ///   when the tag is missing or differs; `CryptoError` `.internalFailure`.
    public func verify(_ stored: [UInt8]?, _ fields: [RegistryRowField], row: String) throws {
        guard let stored else {
            throw RegistryError(.corrupt,
                "the \(table) row \(row) is not authenticated (no row MAC): written without the key-encryption key, or from before schema 5 (push-keys registry migrate --kek-file F authenticates such rows once)")
        }
        guard ConstantTime.equals(stored, try tag(fields)) else {
            throw RegistryError(.corrupt,
                "the \(table) row \(row) fails its authentication under the key-encryption key: it was changed, moved or put back without the KEK: refused")
        }
    }

    /// The bytes a tag covers (see the type's documentation).
    public static func encode(_ fields: [RegistryRowField]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(fields.count * 16)
        func length(_ n: Int) { let v = UInt32(truncatingIfNeeded: n); out += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        for f in fields {
            switch f {
            case .null:
                out.append(0)
            case .text(let s):
                out.append(1)
                let u = Array(s.utf8)
                length(u.count)
                out += u
            case .bytes(let b):
                out.append(2)
                length(b.count)
                out += b
            case .int(let v):
                out.append(3)
                let u = UInt64(bitPattern: v)
                for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(u >> UInt64(shift) & 0xFF)) }
            }
        }
        return out
    }
}

extension KeyEncryptionKey {
    /// The ``RegistryRowMAC`` of `table` under this KEK.
    /// - Throws: `CryptoError` `.internalFailure`.
    public func rowMAC(table: String) throws -> RegistryRowMAC { try RegistryRowMAC(kek: self, table: table) }
}
