package import PushSealCrypto

/// One key with its bytes (internal; never printed).
package struct ManagedKey {
    package var info: KeyInfo
    /// 32 bytes, or `nil` for a tombstone (destroyed) or a disabled key imported without bytes.
    package var secret: SecretBytes?

    package init(info: KeyInfo, secret: SecretBytes?) {
        self.info = info
        self.secret = secret
    }
}

/// A keyset as stored in one keychain item (internal model).
///
/// Item data, format version 2 (binary, big-endian; read on the sender's hot path, so no JSON):
/// ```
/// "PSKS" | version 2 | generation (u64) | appID (u16 len ‖ UTF-8) | recipient (u16 len ‖ UTF-8)
/// rotation: 0 | 1 (added) | 2 (promoted), then if non-zero: keyID (u8 len ‖ ASCII), grace seconds (i64)
/// key count (u16), then per key:
///   keyID (u8 len ‖ ASCII) | status tag (u8) | createdAt (i64) | promotedAt, retiredAt, notAfter (i64, -1 = none)
///   sealCount (u64) | key byte count (u8: 0 or 32) ‖ key bytes
/// ```
/// Version 1 (before 0.2.0) has no generation (read as 0). The generation grows by one at every
/// save and is checked against the store's counter item (``KeychainNames/generationService(appID:)``),
/// so an old item put back is refused (F5).
package struct Keyset {
    package enum RotationPhase: UInt8 { case added = 1, promoted = 2 }
    package struct Rotation {
        package var keyID: String
        package var graceSeconds: Int64
        package var phase: RotationPhase

        package init(keyID: String, graceSeconds: Int64, phase: RotationPhase) {
            self.keyID = keyID
            self.graceSeconds = graceSeconds
            self.phase = phase
        }
    }

    package var appID: String
    package var recipient: String
    package var keys: [ManagedKey]
    package var rotation: Rotation?
    /// Bumped at every save; 0 for a version 1 item.
    package var generation: UInt64 = 0

    package init(appID: String, recipient: String, keys: [ManagedKey], rotation: Rotation?, generation: UInt64 = 0) {
        self.appID = appID
        self.recipient = recipient
        self.keys = keys
        self.rotation = rotation
        self.generation = generation
    }

    package static let magic: [UInt8] = Array("PSKS".utf8)

    package func index(of keyID: String) -> Int? { keys.firstIndex { $0.info.keyID == keyID } }
    package var primaryIndex: Int? { keys.firstIndex { $0.info.status == .primary } }

    package func info(accessGroup: String) -> KeysetInfo {
        KeysetInfo(appID: appID, recipient: recipient, accessGroup: accessGroup, keys: keys.map(\.info), rotationKeyID: rotation?.keyID)
    }

    // MARK: Encoding

    /// The length of ``encode()``'s item data in bytes (the layout above).
    package var encodedByteCount: Int {
        var count = Self.magic.count + 1 + 8 + 2 + appID.utf8.count + 2 + recipient.utf8.count + 1 + 2
        if let r = rotation { count += 1 + r.keyID.utf8.count + 8 }
        for k in keys { count += 1 + k.info.keyID.utf8.count + 1 + 5 * 8 + 1 + (k.secret?.byteCount ?? 0) }
        return count
    }

    /// The item data (version 2). It holds key bytes: the caller wipes it (`SecretBytes.wipe`).
    /// Written into one array reserved at its final size (``encodedByteCount``) up front, so no
    /// reallocation leaves a copy of a key behind in a freed buffer.
    package func encode() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(encodedByteCount)
        out += Self.magic
        out.append(2)
        Self.putInt64(&out, Int64(bitPattern: generation))
        Self.putString16(&out, appID)
        Self.putString16(&out, recipient)
        if let r = rotation {
            out.append(r.phase.rawValue)
            Self.putString8(&out, r.keyID)
            Self.putInt64(&out, r.graceSeconds)
        } else {
            out.append(0)
        }
        out.append(UInt8(truncatingIfNeeded: keys.count >> 8))
        out.append(UInt8(truncatingIfNeeded: keys.count))
        for k in keys {
            Self.putString8(&out, k.info.keyID)
            out.append(k.info.status.storageTag)
            Self.putInt64(&out, k.info.createdAt)
            Self.putInt64(&out, k.info.promotedAt ?? -1)
            Self.putInt64(&out, k.info.retiredAt ?? -1)
            Self.putInt64(&out, k.info.notAfter ?? -1)
            Self.putInt64(&out, Int64(bitPattern: k.info.sealCount))
            if let s = k.secret {
                out.append(UInt8(truncatingIfNeeded: s.byteCount))
                s.appendBytes(to: &out)
            } else {
                out.append(0)
            }
        }
        return out
    }

    package static func decode(_ bytes: [UInt8]) throws -> Keyset {
        var r = Reader(bytes: bytes)
        guard try r.take(4) == Array(magic[...]) else { throw Reader.bad }
        let version = try r.byte()
        guard version == 1 || version == 2 else { throw Reader.bad }
        let generation = version == 2 ? UInt64(bitPattern: try r.int64()) : 0
        let appID = try r.string16()
        let recipient = try r.string16()
        var rotation: Rotation?
        let phaseTag = try r.byte()
        if phaseTag != 0 {
            guard let phase = RotationPhase(rawValue: phaseTag) else { throw Reader.bad }
            rotation = Rotation(keyID: try r.string8(), graceSeconds: try r.int64(), phase: phase)
        }
        let count = Int(try r.byte()) << 8 | Int(try r.byte())
        var keys: [ManagedKey] = []
        keys.reserveCapacity(count)
        for _ in 0..<count {
            let id = try r.string8()
            guard let status = KeyStatus(storageTag: try r.byte()) else { throw Reader.bad }
            let created = try r.int64()
            func opt(_ v: Int64) -> Int64? { v < 0 ? nil : v }
            let promoted = opt(try r.int64()), retired = opt(try r.int64()), notAfter = opt(try r.int64())
            let seals = UInt64(bitPattern: try r.int64())
            let n = Int(try r.byte())
            guard n == 0 || n == AES256GCM.keyByteCount else { throw Reader.bad }
            var secret: SecretBytes?
            if n > 0 {
                guard r.offset + n <= bytes.count else { throw Reader.bad }
                // Copied once, from a span of the item data straight into the secret (the caller
                // wipes `bytes`); no intermediate array holds the key.
                secret = SecretBytes(copying: bytes.span.extracting(r.offset..<(r.offset + n)))
                r.offset += n
            }
            keys.append(ManagedKey(info: KeyInfo(keyID: id, status: status, createdAt: created, promotedAt: promoted,
                                                 retiredAt: retired, notAfter: notAfter, sealCount: seals), secret: secret))
        }
        guard r.offset == bytes.count else { throw Reader.bad }
        return Keyset(appID: appID, recipient: recipient, keys: keys, rotation: rotation, generation: generation)
    }

    package static func putString16(_ out: inout [UInt8], _ s: String) {
        let u = Array(s.utf8)
        out.append(UInt8(truncatingIfNeeded: u.count >> 8))
        out.append(UInt8(truncatingIfNeeded: u.count))
        out += u
    }

    package static func putString8(_ out: inout [UInt8], _ s: String) {
        let u = Array(s.utf8)
        out.append(UInt8(truncatingIfNeeded: u.count))
        out += u
    }

    package static func putInt64(_ out: inout [UInt8], _ v: Int64) {
        let u = UInt64(bitPattern: v)
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: u >> UInt64(shift))) }
    }

    package struct Reader {
        let bytes: [UInt8]
        var offset = 0
        static let bad = KeysError(.corruptKeyset, "keyset item data is malformed")

        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw Self.bad }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ n: Int) throws -> [UInt8] {
            guard n >= 0, offset + n <= bytes.count else { throw Self.bad }
            defer { offset += n }
            return Array(bytes[offset..<(offset + n)])
        }

        mutating func int64() throws -> Int64 {
            var v: UInt64 = 0
            for _ in 0..<8 { v = v << 8 | UInt64(try byte()) }
            return Int64(bitPattern: v)
        }

        mutating func string8() throws -> String {
            let n = Int(try byte())
            return String(decoding: try take(n), as: UTF8.self)
        }

        mutating func string16() throws -> String {
            let n = Int(try byte()) << 8 | Int(try byte())
            return String(decoding: try take(n), as: UTF8.self)
        }
    }
}
