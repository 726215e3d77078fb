import PushSealFormat

// The wire format v1 pieces the sender needs: AAD and Padmé length come from PushSealFormat's
// `WireFormat` / `Padme`; the plaintext layout is written here with the sender's own writer
// (the interop tests open it with the Python reference and an independent AESGCM script).
enum Wire {
    /// `enc_alg` value.
    static let algorithm = "A256GCM"

    /// UTF-8 of `pushseal:v1|A256GCM|<key_id>|<app_id>`.
    static func aad(keyID: String, appID: String) -> [UInt8] {
        WireFormat.aad(algorithm: algorithm, keyID: keyID, appID: appID)
    }

    /// Padmé length (Nikitin et al., PoPETs 2019, Algorithm 1): 100→104, 1000→1024, 2049→2176.
    static func padmeLength(_ length: Int) -> Int { Padme.paddedLength(length) }

    /// `true` for 1-64 characters of `A-Z a-z 0-9 _ -`.
    static func isValidKeyID(_ keyID: String) -> Bool {
        let u = keyID.utf8
        guard (1...64).contains(u.count) else { return false }
        return u.allSatisfy { c in
            (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || (0x30...0x39).contains(c) || c == 0x5F || c == 0x2D
        }
    }

    /// Writes the plaintext object, compact, members in the order title, subtitle, body,
    /// media, localizations, data, iat, exp, id. `body` overrides the notification's body.
    static func writePlaintext(_ n: OutgoingNotification, body: String?, includeMedia: Bool, to w: inout PayloadWriter) throws {
        w.byte(UInt8(ascii: "{"))
        var first = true
        func key(_ k: StaticString, _ w: inout PayloadWriter) {
            if !first { w.byte(UInt8(ascii: ",")) }
            first = false
            w.byte(0x22)
            w.raw(k)
            w.raw("\":")
        }
        if let t = n.title { key("title", &w); w.string(t) }
        if let t = n.subtitle { key("subtitle", &w); w.string(t) }
        if let b = body { key("body", &w); w.string(b) }
        if includeMedia, let m = n.media {
            key("media", &w)
            w.raw("{\"url\":")
            w.string(m.url)
            if let t = m.type { w.raw(",\"type\":"); w.string(t) }
            if let s = m.sha256 { w.raw(",\"sha256\":"); w.string(s) }
            if let k = m.key { w.raw(",\"key\":"); w.string(k) }
            w.byte(UInt8(ascii: "}"))
        }
        if let l = n.localizations { key("localizations", &w); try w.object(l) }
        if let d = n.data { key("data", &w); try w.object(d) }
        if let i = n.iat { key("iat", &w); w.integer(i) }
        if let e = n.exp { key("exp", &w); w.integer(e) }
        if let i = n.id { key("id", &w); w.string(i) }
        w.byte(UInt8(ascii: "}"))
    }
}
