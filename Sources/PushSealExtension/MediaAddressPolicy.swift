import PushSealSystem

/// Which IP addresses a media download may connect to (F7 of the December review: no
/// server-side request forgery through the media URL).
///
/// Refused, for the first hop and every redirect, on the address the socket actually connects
/// to (after name resolution, so a name that resolves — or re-resolves — to one of them is
/// refused too), and already on the URL when its host is an IP literal in any spelling
/// (`127.1`, `2130706433`, `0177.0.0.1`, `0x7f.0.0.1`, `[::ffff:127.0.0.1]`):
/// - IPv4 (IANA IPv4 Special-Purpose Address Registry and RFC 6890): 0.0.0.0/8 this network,
///   10/8, 172.16/12 and 192.168/16 private (RFC 1918), 100.64/10 shared address space
///   (CGNAT, RFC 6598), 127/8 loopback, 169.254/16 link-local, 192.0.0/24 IETF protocol
///   assignments, 192.0.2/24, 198.51.100/24 and 203.0.113/24 documentation (RFC 5737),
///   192.88.99/24 the deprecated 6to4 relay anycast, 198.18/15 benchmarking (RFC 2544),
///   224/4 multicast, 240/4 reserved (255.255.255.255 included).
/// - IPv6: everything outside 2000::/3 global unicast (`::`, `::1`, fc00::/7 unique local,
///   fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast, 100::/64 discard-only,
///   64:ff9b:1::/48 local-use NAT64, …) and inside it 2001::/23 IETF protocol assignments
///   (Teredo, benchmarking, ORCHID), 2001:db8::/32 and 3fff::/20 documentation, 5f00::/16
///   SRv6 SIDs. An IPv4 address embedded in `::ffff:0:0/96` (IPv4-mapped), `64:ff9b::/96`
///   (NAT64) or `2002::/16` (6to4) is judged as that IPv4 address.
///
/// The only exception is the test flag: with ``allowsLoopback``, loopback addresses (127/8,
/// `::1`, and their IPv4-mapped forms) on ``loopbackPorts`` (every port when `nil`).
/// Plain `http` hops must connect to an allowed loopback address.
public struct MediaAddressPolicy: Sendable, Hashable {
    /// Loopback addresses may be connected to (tests, `--allow-insecure-loopback`).
    public let allowsLoopback: Bool
    /// With ``allowsLoopback``: the only loopback TCP ports allowed (`nil`: every port).
    public let loopbackPorts: Set<Int>?

    /// Creates a policy.
    /// - Parameters:
    ///   - allowsLoopback: allow loopback addresses (the test flag).
    ///   - loopbackPorts: with `allowsLoopback`, only these TCP ports (`nil`: any).
    public init(allowsLoopback: Bool = false, loopbackPorts: Set<Int>? = nil) {
        self.allowsLoopback = allowsLoopback
        self.loopbackPorts = loopbackPorts
    }

    /// What an address is, for the policy and the refusal's reason.
    public enum AddressClass: String, Sendable, CaseIterable {
        /// A publicly routable unicast address: allowed.
        case global
        /// 127.0.0.0/8, `::1`.
        case loopback
        /// RFC 1918: 10/8, 172.16/12, 192.168/16.
        case privateNetwork
        /// 100.64.0.0/10 (carrier-grade NAT, RFC 6598).
        case sharedAddressSpace
        /// 169.254.0.0/16, fe80::/10.
        case linkLocal
        /// 224.0.0.0/4, ff00::/8.
        case multicast
        /// 0.0.0.0/8 ("this network"), `::`.
        case unspecified
        /// 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20.
        case documentation
        /// 198.18.0.0/15, 2001:2::/48.
        case benchmarking
        /// fc00::/7 (and the deprecated site-local fec0::/10).
        case uniqueLocal
        /// Every other entry of the IANA special-purpose registries, reserved space, broadcast.
        case specialPurpose
    }

    /// Classifies 4 (IPv4) or 16 (IPv6) address bytes in network order; any other count is
    /// `.specialPurpose`.
    public static func classify(_ bytes: [UInt8]) -> AddressClass {
        switch bytes.count {
        case 4: return classifyV4(bytes[0], bytes[1], bytes[2], bytes[3])
        case 16: return classifyV6(bytes)
        default: return .specialPurpose
        }
    }

    private static func classifyV4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> AddressClass {
        switch (a, b, c) {
        case (0, _, _): return .unspecified
        case (10, _, _): return .privateNetwork
        case (100, 64...127, _): return .sharedAddressSpace
        case (127, _, _): return .loopback
        case (169, 254, _): return .linkLocal
        case (172, 16...31, _): return .privateNetwork
        case (192, 0, 0): return .specialPurpose
        case (192, 0, 2), (198, 51, 100), (203, 0, 113): return .documentation
        case (192, 88, 99): return .specialPurpose
        case (192, 168, _): return .privateNetwork
        case (198, 18...19, _): return .benchmarking
        case (224...239, _, _): return .multicast
        case (240...255, _, _): return .specialPurpose
        default: return .global
        }
    }

    private static func classifyV6(_ x: [UInt8]) -> AddressClass {
        let zeros10 = x[0..<10].allSatisfy { $0 == 0 }
        // IPv4-mapped ::ffff:a.b.c.d.
        if zeros10, x[10] == 0xff, x[11] == 0xff { return classifyV4(x[12], x[13], x[14], x[15]) }
        // NAT64 well-known prefix 64:ff9b::/96.
        if x[0] == 0x00, x[1] == 0x64, x[2] == 0xff, x[3] == 0x9b, x[4..<12].allSatisfy({ $0 == 0 }) {
            return classifyV4(x[12], x[13], x[14], x[15])
        }
        if x.allSatisfy({ $0 == 0 }) { return .unspecified }
        if x[0..<15].allSatisfy({ $0 == 0 }), x[15] == 1 { return .loopback }
        switch x[0] {
        case 0xff: return .multicast
        case 0xfc, 0xfd: return .uniqueLocal
        case 0xfe:
            if x[1] & 0xc0 == 0x80 { return .linkLocal }
            if x[1] & 0xc0 == 0xc0 { return .uniqueLocal }
            return .specialPurpose
        default: break
        }
        // Only 2000::/3 is global unicast.
        guard x[0] & 0xe0 == 0x20 else { return .specialPurpose }
        if x[0] == 0x20, x[1] == 0x01 {
            if x[2] == 0x0d, x[3] == 0xb8 { return .documentation }
            if x[2] == 0x00, x[3] == 0x02, x[4] == 0, x[5] == 0 { return .benchmarking }
            if x[2] < 0x02 { return .specialPurpose } // 2001::/23
        }
        if x[0] == 0x20, x[1] == 0x02 { return classifyV4(x[2], x[3], x[4], x[5]) } // 6to4
        if x[0] == 0x3f, x[1] == 0xff, x[2] & 0xf0 == 0 { return .documentation } // 3fff::/20
        if x[0] == 0x5f, x[1] == 0x00 { return .specialPurpose } // SRv6 SIDs
        return .global
    }

    /// The address bytes of a URL host that is an IP literal in any spelling libc's resolver
    /// and libcurl accept — IPv4 as `inet_aton` reads it (1 to 4 parts, each decimal, octal
    /// with a leading 0, or hex with 0x: `127.1`, `2130706433`, `0177.0.0.1`), IPv6 with or
    /// without brackets and zone id — else `nil` (a name).
    public static func ipLiteral(_ host: String) -> [UInt8]? {
        var h = Substring(host)
        if h.hasPrefix("["), h.hasSuffix("]") { h = h.dropFirst().dropLast() }
        if h.hasSuffix(".") { h = h.dropLast() }
        if let percent = h.firstIndex(of: "%") { h = h[..<percent] }
        let text = String(h)
        return text.contains(":") ? IPAddress.v6(text) : IPAddress.v4(text)
    }

    /// Text for an address (dotted quad, or RFC 5952 IPv6).
    public static func describe(_ bytes: [UInt8]) -> String {
        IPAddress.text(bytes) ?? "an unparsable address"
    }

    /// Checks one connection (or an IP-literal URL host).
    /// - Parameters:
    ///   - bytes: 4 or 16 address bytes, network order.
    ///   - port: the TCP port.
    ///   - plainHTTP: the hop is plain `http` (App Transport Security: loopback only, with the flag).
    /// - Throws: `ExtensionError` `.mediaURLRefused` naming the address and its class.
    public func check(_ bytes: [UInt8], port: Int, plainHTTP: Bool) throws {
        let kind = Self.classify(bytes)
        if kind == .loopback {
            guard allowsLoopback else {
                throw ExtensionError(.mediaURLRefused, "\(Self.describe(bytes)) is a loopback address (refused without the test flag)")
            }
            if let loopbackPorts, !loopbackPorts.contains(port) {
                throw ExtensionError(.mediaURLRefused, "\(Self.describe(bytes)) port \(port) is not an allowed loopback port")
            }
            return
        }
        guard kind == .global else {
            throw ExtensionError(.mediaURLRefused, "\(Self.describe(bytes)) is a \(kind.rawValue) address")
        }
        if plainHTTP {
            throw ExtensionError(.mediaURLRefused, "plain http to a non-loopback address is refused (App Transport Security)")
        }
    }
}
