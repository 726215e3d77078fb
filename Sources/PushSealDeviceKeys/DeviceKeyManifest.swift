public import PushSealCrypto
import PushSealKeychain
import PushSealKeyRecords

/// The rollback guard of an app's device key items (docs/keychain.md "The key manifest";
/// security review F5): one generic-password item per app, service `pushseal.manifest:<appID>`,
/// account `manifest`, label `PushSeal key manifest`, accessibility
/// `afterFirstUnlockThisDeviceOnly`, in the access group of the key items. It names every key
/// item of the app (kinds 1–3) with the SHA-256 of the 59-byte record the item must hold, and a
/// generation that grows by one with every manifest write. A reader accepts a key item only when
/// the manifest lists its digest, so an older copy of an item put back (a key before its revoke
/// or retirement), a pruned key or a removed pin restored, or an item written around the
/// toolkit, does not open (`keyRolledBack`).
///
/// Bytes (`kSecValueData`), integers big-endian:
/// ```
/// 0   1   layout version: 1
/// 1   8   generation: UInt64, ≥ 1
/// 9   2   entry count N: UInt16, ≤ 4096
/// 11  …   N entries, sorted by (kind, key id bytes), each:
///         kind (1) ‖ key id length L (1, 1–64) ‖ key id (L, ASCII) ‖ digest (32) ‖ previous digest (32)
/// ```
/// `digest` is SHA-256 of the record the item holds, or 32 zero bytes while the item is being
/// deleted; `previous digest` is SHA-256 of the record it held before the write in progress, or
/// 32 zero bytes (none). Every change of one item is three writes: the manifest with both digests,
/// the item, the manifest with the new digest alone — so a reader running alongside, or a crash
/// between the writes, finds the item in one of the two accepted states, never refused.
public struct DeviceKeyManifest: Sendable, Hashable {
    /// `kSecAttrService` prefix: `pushseal.manifest:` (the app id follows).
    public static let servicePrefix = "pushseal.manifest:"
    /// `kSecAttrAccount`: `manifest`.
    public static let account = "manifest"
    /// `kSecAttrLabel`: `PushSeal key manifest`.
    public static let label = "PushSeal key manifest"
    /// 1: byte 0.
    public static let layoutVersion: UInt8 = 1
    /// Field offsets of the header: version 0, generation 1, entry count 9, first entry 11.
    public static let versionOffset = 0, generationOffset = 1, entryCountOffset = 9, entriesOffset = 11
    /// 32: a digest's byte count (SHA-256).
    public static let digestByteCount = SHA256Hasher.digestByteCount
    /// 4096: the most entries a manifest holds.
    public static let maxEntryCount = 4096

    /// `kSecAttrService` of the manifest of `appID`, e.g. `pushseal.manifest:com.example.app`.
    public static func service(appID: String) -> String { servicePrefix + appID }

    /// SHA-256 of an item's data, the digest a manifest entry holds.
    /// - Throws: `CryptoError` `.internalFailure`.
    public static func digest(of data: SecretBytes) throws -> [UInt8] {
        let hasher = SHA256Hasher()
        data.withUnsafeBytes { hasher.update($0) }
        return try hasher.finalize()
    }

    /// One key item the manifest vouches for.
    public struct Entry: Sendable, Hashable {
        /// The kind written (the item's service: kinds 1 and 2 `pushseal.key:`, 3 `pushseal.sender:`).
        public var kind: DeviceKeyKind
        /// The key id (the item's account).
        public var keyID: String
        /// SHA-256 of the record the item holds; nil while it is being deleted.
        public var digest: [UInt8]?
        /// SHA-256 of the record it held before the write in progress; nil when none.
        public var previousDigest: [UInt8]?

        /// An entry (see the properties).
        public init(kind: DeviceKeyKind, keyID: String, digest: [UInt8]?, previousDigest: [UInt8]? = nil) {
            (self.kind, self.keyID, self.digest, self.previousDigest) = (kind, keyID, digest, previousDigest)
        }

        /// Whether an item of this entry's service may hold data of `digest`.
        public func accepts(_ digest: [UInt8]) -> Bool { digest == self.digest || digest == previousDigest }
    }

    /// Grows by one with every write (1 for the first manifest).
    public var generation: UInt64
    /// Sorted by kind, then key id bytes; at most one per (service, key id).
    public var entries: [Entry]

    /// A manifest (entries are sorted by ``encoded()``).
    public init(generation: UInt64 = 0, entries: [Entry] = []) {
        (self.generation, self.entries) = (generation, entries)
    }

    /// The entry for the item `keyID` under `kind`'s service (kinds 1 and 2 share one), if any.
    public func entry(_ kind: DeviceKeyKind, keyID: String) -> Entry? {
        entries.first { $0.keyID == keyID && $0.kind.servicePrefix == kind.servicePrefix }
    }

    /// The key ids of the pinned sender keys (kind 3 entries, also one being deleted), sorted.
    public var senderKeyIDs: [String] { entries.filter { $0.kind == .senderKey }.map(\.keyID).sorted() }

    /// Decodes the manifest; refuses (never guesses) another layout version, a generation of 0,
    /// an entry of another kind or key id, entries out of order or repeated, trailing bytes.
    /// - Throws: `KeysError` `.corruptKey`.
    public init(decoding data: SecretBytes) throws {
        let bytes = data.copyBytes()
        func damaged(_ what: String) -> KeysError {
            KeysError(.corruptKey, "the key manifest is damaged (\(what)); docs/keychain.md \"The key manifest\"")
        }
        guard bytes.count >= Self.entriesOffset, bytes[Self.versionOffset] == Self.layoutVersion else { throw damaged("header") }
        func uint(_ offset: Int, _ count: Int) -> UInt64 { bytes[offset..<offset + count].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
        generation = uint(Self.generationOffset, 8)
        let count = Int(uint(Self.entryCountOffset, 2))
        guard generation >= 1, count <= Self.maxEntryCount else { throw damaged("generation or entry count") }
        var entries: [Entry] = []
        var at = Self.entriesOffset
        let zero = [UInt8](repeating: 0, count: Self.digestByteCount)
        for _ in 0..<count {
            guard at + 2 <= bytes.count, let kind = DeviceKeyKind(rawValue: bytes[at]) else { throw damaged("entry kind") }
            let length = Int(bytes[at + 1])
            let end = at + 2 + length + 2 * Self.digestByteCount
            guard end <= bytes.count else { throw damaged("entry length") }
            // Key ids are ASCII (KeyID's rules): any other byte fails the check.
            let keyID = String(decoding: bytes[at + 2..<at + 2 + length], as: UTF8.self)
            guard (try? KeyID.validate(keyID)) != nil, keyID.utf8.count == length else { throw damaged("entry key id") }
            let digest = Array(bytes[at + 2 + length..<at + 2 + length + Self.digestByteCount])
            let previous = Array(bytes[end - Self.digestByteCount..<end])
            let entry = Entry(kind: kind, keyID: keyID, digest: digest == zero ? nil : digest, previousDigest: previous == zero ? nil : previous)
            if let last = entries.last, !Self.ordered(last, entry) { throw damaged("entries out of order") }
            guard entry.digest != nil || entry.previousDigest != nil else { throw damaged("an entry without a digest") }
            entries.append(entry)
            at = end
        }
        guard at == bytes.count else { throw damaged("trailing bytes") }
        self.entries = entries
    }

    /// The manifest's bytes, entries sorted.
    /// - Throws: `KeysError` `.invalidState` (more than ``maxEntryCount`` entries, a key id the
    ///   rules refuse, two entries for one item).
    public func encoded() throws -> SecretBytes {
        let sorted = entries.sorted(by: Self.ordered)
        guard sorted.count <= Self.maxEntryCount else { throw KeysError(.invalidState, "a key manifest holds at most \(Self.maxEntryCount) items") }
        var out: [UInt8] = [Self.layoutVersion]
        withUnsafeBytes(of: generation.bigEndian) { out += $0 }
        withUnsafeBytes(of: UInt16(sorted.count).bigEndian) { out += $0 }
        let zero = [UInt8](repeating: 0, count: Self.digestByteCount)
        for (i, e) in sorted.enumerated() {
            try KeyID.validate(e.keyID)
            if i > 0, !Self.ordered(sorted[i - 1], e) { throw KeysError(.invalidState, "two manifest entries for item \(e.keyID)") }
            out += [e.kind.rawValue, UInt8(e.keyID.utf8.count)] + Array(e.keyID.utf8) + (e.digest ?? zero) + (e.previousDigest ?? zero)
        }
        return SecretBytes(copying: out)
    }

    /// The manifest's order: kind, then key id bytes (strictly increasing).
    static func ordered(_ a: Entry, _ b: Entry) -> Bool {
        a.kind.rawValue != b.kind.rawValue ? a.kind.rawValue < b.kind.rawValue : Array(a.keyID.utf8).lexicographicallyPrecedes(Array(b.keyID.utf8))
    }
}
