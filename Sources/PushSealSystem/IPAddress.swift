#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// IP address text to bytes and back, with libc's own parsers (`inet_aton`, `inet_pton`,
/// `inet_ntop`), so a check on an address reads it exactly as the resolver and libcurl do.
public enum IPAddress {
    /// The 4 bytes (network order) of an IPv4 address as `inet_aton` reads it: 1 to 4 parts,
    /// each decimal, octal with a leading 0, or hex with 0x (`127.1`, `2130706433`,
    /// `0177.0.0.1`); `nil` when it is not one. Text with a byte at or below U+0020 is refused
    /// (`inet_aton` would ignore whatever follows a space).
    public static func v4(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 }) else { return nil }
        var address = in_addr()
        guard inet_aton(text, &address) != 0 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// The 16 bytes (network order) of an IPv6 address in RFC 4291 §2.2 text (no brackets,
    /// no zone id), as `inet_pton(AF_INET6)` reads it; `nil` when it is not one.
    public static func v6(_ text: String) -> [UInt8]? {
        var address = in6_addr()
        guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
        return withUnsafeBytes(of: &address) { Array($0) }
    }

    /// Text for 4 address bytes (dotted quad) or 16 (RFC 5952 IPv6), by `inet_ntop`; `nil`
    /// for any other count.
    public static func text(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let capacity = socklen_t(buffer.count)
        let written = buffer.withUnsafeMutableBufferPointer { out in
            bytes.withUnsafeBytes { b in inet_ntop(family, b.baseAddress, out.baseAddress, capacity) }
        }
        guard written != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
