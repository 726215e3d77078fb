#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealCrypto
import PushSealSystem

/// The on-disk form of one keychain item, one file per item (`items/<hex SHA-256 of the
/// primary key>.item`), format version 1:
///
/// ```
/// header:  "PSKI" | version 1 | class tag | accessibility tag | 0
///          creation µs (Int64 BE) | modification µs (Int64 BE)
///          group, service, account, label: each UInt16 BE byte count ‖ UTF-8 (label 0xFFFF = none)
/// headerBox: AES-256-GCM seal of nothing under the metadata key, AAD = "pushseal-keychain:v1:header" ‖ header (28 bytes)
/// secretLength: UInt32 BE, then secretBox: AES-256-GCM seal of the secret under the class key,
///          AAD = "pushseal-keychain:v1:item" ‖ header
/// ```
///
/// The header is readable without a class key (listing works while locked) but authenticated by
/// the metadata key; the secret's AAD binds class, primary key, group, accessibility, label and
/// dates, so a ciphertext moved to another item never opens.
struct ItemRecord {
    var attributes: ItemAttributes

    static let magic: [UInt8] = Array("PSKI".utf8)
    static let version: UInt8 = 1
    static let maxStringByteCount = 4096
    /// Largest secret accepted (1 MiB).
    static let maxDataByteCount = 1 << 20
    static let maxFileByteCount = maxDataByteCount + 5 * maxStringByteCount + 256
    static let headerAADPrefix: [UInt8] = Array("pushseal-keychain:v1:header".utf8)
    static let secretAADPrefix: [UInt8] = Array("pushseal-keychain:v1:item".utf8)
    static let noLabel: UInt16 = 0xFFFF

    /// The file name for a primary key: 64 lowercase hex digits of SHA-256 over the
    /// length-prefixed (class, group, service, account), then `.item`.
    static func fileName(itemClass: ItemClass, accessGroup: String, service: String, account: String) -> String {
        var input: [UInt8] = Array("pushseal-keychain:v1:primary-key".utf8)
        input.append(itemClass.storageTag)
        for s in [accessGroup, service, account] {
            let u = Array(s.utf8)
            appendUInt32(&input, UInt32(truncatingIfNeeded: u.count))
            input += u
        }
        let digest = (try? SHA256Hasher.hash(input)) ?? []
        return Hex.encode(digest) + ".item"
    }

    var fileName: String {
        Self.fileName(itemClass: attributes.itemClass, accessGroup: attributes.accessGroup, service: attributes.service, account: attributes.account)
    }

    static func appendUInt16(_ out: inout [UInt8], _ v: UInt16) { out.append(UInt8(v >> 8)); out.append(UInt8(v & 0xFF)) }
    static func appendUInt32(_ out: inout [UInt8], _ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8((v >> UInt32(shift)) & 0xFF)) }
    }
    static func appendInt64(_ out: inout [UInt8], _ v: Int64) {
        let u = UInt64(bitPattern: v)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((u >> UInt64(shift)) & 0xFF)) }
    }

    /// The current time at the stored precision (whole microseconds).
    static func now() -> Date { Date(timeIntervalSince1970: Double(microseconds(Date())) / 1_000_000) }

    static func microseconds(_ date: Date) -> Int64 {
        let v = (date.timeIntervalSince1970 * 1_000_000).rounded()
        guard v.isFinite, v < 9.0e18, v > -9.0e18 else { return 0 }
        return Int64(v)
    }

    /// The header bytes for these attributes.
    func header() -> [UInt8] {
        var h = Self.magic
        h.append(Self.version)
        h.append(attributes.itemClass.storageTag)
        h.append(attributes.accessibility.storageTag)
        h.append(0)
        Self.appendInt64(&h, Self.microseconds(attributes.creationDate))
        Self.appendInt64(&h, Self.microseconds(attributes.modificationDate))
        for s in [attributes.accessGroup, attributes.service, attributes.account] {
            let u = Array(s.utf8)
            Self.appendUInt16(&h, UInt16(truncatingIfNeeded: u.count))
            h += u
        }
        if let label = attributes.label {
            let u = Array(label.utf8)
            Self.appendUInt16(&h, UInt16(truncatingIfNeeded: u.count))
            h += u
        } else {
            Self.appendUInt16(&h, Self.noLabel)
        }
        return h
    }

    /// Encodes the whole file: header, header box, secret box.
    func encode(secret: SecretBytes, metadataKey: SecretBytes, classKey: SecretBytes) throws -> [UInt8] {
        let h = header()
        do {
            let headerBox = try AES256GCM.seal([], with: metadataKey, authenticating: Self.headerAADPrefix + h)
            let secretBox = try secret.withUnsafeBytes { s in
                try (Self.secretAADPrefix + h).withUnsafeBytes { a in try AES256GCM.seal(s, with: classKey, authenticating: a) }
            }
            var out = h
            out += headerBox.combined
            Self.appendUInt32(&out, UInt32(secretBox.combined.count))
            out += secretBox.combined
            return out
        } catch {
            throw KeychainError(.io, "cannot seal the item: \(error)")
        }
    }

    /// The access group a (possibly damaged) item file's header names, read without
    /// authentication; `nil` when the header is too damaged to say. Only for deciding that a
    /// damaged file is not the caller's (a scan skips it): never trusted for access.
    static func claimedAccessGroup(_ bytes: [UInt8]) -> String? {
        let start = magic.count + 4 + 16
        guard bytes.count >= start + 2, Array(bytes[0..<magic.count]) == magic else { return nil }
        let n = Int(bytes[start]) << 8 | Int(bytes[start + 1])
        guard bytes.count >= start + 2 + n else { return nil }
        return String(validating: bytes[(start + 2)..<(start + 2 + n)], as: UTF8.self)
    }

    /// A decoded, header-authenticated file; the secret box is kept sealed until asked for.
    struct Parsed {
        var record: ItemRecord
        var header: [UInt8]
        var secretBox: [UInt8]
    }

    /// Parses and authenticates the header of `bytes` read from `path`.
    /// - Throws: `.corrupt` for any malformed, truncated or unauthenticated content.
    static func parse(_ bytes: [UInt8], path: String, metadataKey: SecretBytes) throws -> Parsed {
        func bad(_ what: String) -> KeychainError { KeychainError(.corrupt, "keychain item file \(path) is damaged: \(what)") }
        var i = 0
        func take(_ n: Int) throws -> ArraySlice<UInt8> {
            guard n >= 0, bytes.count - i >= n else { throw bad("truncated") }
            defer { i += n }
            return bytes[i..<(i + n)]
        }
        func u16() throws -> Int { let s = try take(2); return Int(s[s.startIndex]) << 8 | Int(s[s.startIndex + 1]) }
        func u32() throws -> Int { try take(4).reduce(0) { $0 << 8 | Int($1) } }
        func i64() throws -> Int64 { Int64(bitPattern: try take(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }) }
        func string(_ n: Int) throws -> String {
            guard let s = String(validating: try take(n), as: UTF8.self) else { throw bad("a name is not UTF-8") }
            return s
        }
        guard Array(try take(4)) == magic else { throw bad("not a keychain item (bad magic)") }
        guard try take(1).first == version else { throw bad("unknown format version") }
        guard let itemClass = ItemClass(storageTag: try take(1)[i - 1]) else { throw bad("unknown item class") }
        guard let accessibility = Accessibility(storageTag: try take(1)[i - 1]) else { throw bad("unknown accessibility") }
        guard try take(1)[i - 1] == 0 else { throw bad("reserved byte set") }
        let created = try i64()
        let modified = try i64()
        let group = try string(try u16())
        let service = try string(try u16())
        let account = try string(try u16())
        let labelLength = try u16()
        let label: String? = labelLength == Int(noLabel) ? nil : try string(labelLength)
        let header = Array(bytes[0..<i])
        let headerBox = try take(AES256GCM.minimumCombinedByteCount)
        let secretLength = try u32()
        guard secretLength >= AES256GCM.minimumCombinedByteCount else { throw bad("secret box too short") }
        let secretBox = Array(try take(secretLength))
        guard i == bytes.count else { throw bad("trailing bytes") }
        do {
            let box = try SealedBox(combined: Array(headerBox))
            _ = try AES256GCM.open(box, with: metadataKey, authenticating: headerAADPrefix + header)
        } catch {
            throw bad("header does not authenticate (modified, or sealed under another device secret)")
        }
        let attributes = ItemAttributes(itemClass: itemClass, service: service, account: account, label: label, accessGroup: group,
                                        accessibility: accessibility,
                                        creationDate: Date(timeIntervalSince1970: Double(created) / 1_000_000),
                                        modificationDate: Date(timeIntervalSince1970: Double(modified) / 1_000_000))
        return Parsed(record: ItemRecord(attributes: attributes), header: header, secretBox: secretBox)
    }
}

extension ItemRecord.Parsed {
    /// Opens the secret box with the class key.
    /// - Throws: `.corrupt` when it does not authenticate (bit flip, ciphertext of another item).
    func openSecret(classKey: SecretBytes, path: String) throws -> SecretBytes {
        do {
            let box = try SealedBox(combined: secretBox)
            var plain = try AES256GCM.open(box, with: classKey, authenticating: ItemRecord.secretAADPrefix + header)
            defer { SecretBytes.wipe(&plain) }
            return SecretBytes(copying: plain)
        } catch {
            throw KeychainError(.corrupt, "keychain item file \(path) is damaged: secret data does not authenticate (modified, or a ciphertext of another item)")
        }
    }
}
