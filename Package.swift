// swift-tools-version:6.0
// PushSeal: end-to-end encrypted push notifications for iOS apps.
// Layers (arrows point down only; docs/modules.md draws every edge):
//   CLIs (push-seal, push-open, push-keys) -> PushSealCLI + Server/DeviceKeyProviders -> Sender / Extension / Keys
//   Sender / Extension know keys only through the provider protocols in Wire; the KeyProviders hold the keychain adapters
//   (the opening one on DeviceKeys, the sealing ones on ServerKeys: push-open links no server store).
//   ServerKeys -> DeviceKeys -> KeyRecords -> Keychain / Wire -> JSON / Crypto -> System -> libc
//   PushSealCLI -> JSON / System; Crypto -> OpenSSL, libsodium; Wire -> libsodium, CPushSealSIMD; JSON -> CPushSealSIMD
//   Extension -> MediaFetch -> System, CCurlLazy (libcurl.so.4 by dlopen on the first fetch; never linked)
//   APNs -> Crypto / JSON / System, CNghttp2 (libnghttp2), CPushSealTLS -> COpenSSLTLS (libssl)
import PackageDescription

let package = Package(
    name: "PushSeal",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "PushSealSystem", targets: ["PushSealSystem"]),
        .library(name: "PushSealJSON", targets: ["PushSealJSON"]),
        .library(name: "PushSealCrypto", targets: ["PushSealCrypto"]),
        .library(name: "PushSealWire", targets: ["PushSealWire"]),
        .library(name: "PushSealKeychain", targets: ["PushSealKeychain"]),
        .library(name: "PushSealKeyRecords", targets: ["PushSealKeyRecords"]),
        .library(name: "PushSealDeviceKeys", targets: ["PushSealDeviceKeys"]),
        .library(name: "PushSealServerKeys", targets: ["PushSealServerKeys"]),
        .library(name: "PushSealSender", targets: ["PushSealSender"]),
        .library(name: "PushSealExtension", targets: ["PushSealExtension"]),
        .library(name: "PushSealDeviceKeyProviders", targets: ["PushSealDeviceKeyProviders"]),
        .library(name: "PushSealServerKeyProviders", targets: ["PushSealServerKeyProviders"]),
        .library(name: "PushSealRegistry", targets: ["PushSealRegistry"]),
        .library(name: "PushSealAPNs", targets: ["PushSealAPNs"]),
        .library(name: "PushSealMediaFetch", targets: ["PushSealMediaFetch"]),
        .library(name: "PushSealHTTP", targets: ["PushSealHTTP"]),
        .library(name: "PushSealGateway", targets: ["PushSealGateway"]),
        .library(name: "PushSealServer", targets: ["PushSealServer"]),
        .library(name: "PushSealRegistrationTokens", targets: ["PushSealRegistrationTokens"]),
        .executable(name: "push-seal", targets: ["push-seal"]),
        .executable(name: "push-open", targets: ["push-open"]),
        .executable(name: "push-keys", targets: ["push-keys"]),
        .executable(name: "push-send", targets: ["push-send"]),
        .executable(name: "push-gateway", targets: ["push-gateway"]),
        .executable(name: "push-bench", targets: ["push-bench"]),
    ],
    targets: [
        // System libraries (Debian: libssl-dev, libsodium-dev, libpq-dev; libcurl4-openssl-dev for CCurlLazy's <curl/curl.h>).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        // The APNs client's HTTP/2 (Debian libnghttp2-dev) and TLS (libssl from libssl-dev).
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"]), .brew(["libnghttp2"])]),
        .systemLibrary(name: "COpenSSLTLS", pkgConfig: "libssl", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        // The gateway's HTTP/1.1 server (Debian libmicrohttpd-dev).
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"]), .brew(["libmicrohttpd"])]),

        // Our C targets. CPushSealSIMD: byte loops (Wire's base64, JSON's string scan, used by
        // the sender and the receiver) vectorized for x86-64 with a run-time CPU check; public data only.
        .target(name: "CPushSealSIMD"),
        // CCurlLazy: libcurl for the media fetcher without linking it. <curl/curl.h> for types and
        // constants; libcurl.so.4 is loaded with dlopen on the first fetch (pthread_once) and
        // called through dlsym'd entry points, so a notification without media never maps libcurl
        // and its ~30 libraries (~5 MiB of RSS, ~30 ms at every start of push-open). The typed
        // wrappers are in Sources/CCurlLazy/pushseal_curl_calls.h.
        .target(name: "CCurlLazy", linkerSettings: [.linkedLibrary("dl", .when(platforms: [.linux]))]),
        // CPushSealTLS: a non-blocking TCP connection with OpenSSL TLS on it (TLS 1.2+, ALPN h2,
        // peer verified, SNI and host name checked) for PushSealAPNs' HTTP/2 connections.
        .target(name: "CPushSealTLS", dependencies: ["COpenSSLTLS"]),
        // CPushSealHTTPD: MHD_start_daemon and MHD_get_daemon_info are C variadic functions, which Swift cannot call.
        .target(name: "CPushSealHTTPD", dependencies: ["CMicroHTTPD"]),

        // Foundation layer: no Foundation, no C library but libc.
        // PushSealSystem: file descriptors with the private-file rules, Locked, the detached
        // thread, the monotonic clock, errno text, Hex and the one error shape (CodedError).
        .target(name: "PushSealSystem"),
        // PushSealJSON: JSONValue, reader, scanner, writer; nothing about notifications.
        .target(name: "PushSealJSON", dependencies: ["PushSealSystem", "CPushSealSIMD"]),

        // Libraries.
        .target(name: "PushSealCrypto", dependencies: ["PushSealSystem", "COpenSSL", "CSodium"]),
        .target(name: "PushSealWire", dependencies: ["PushSealCrypto", "PushSealJSON", "PushSealSystem", "CSodium", "CPushSealSIMD"]),
        .target(name: "PushSealKeychain", dependencies: ["PushSealSystem", "PushSealJSON", "PushSealCrypto"]),
        // The keys, split along the device/server seam (docs/modules.md "Keys"):
        // PushSealKeyRecords: what both sides share (key records, ids, statuses, keysets, KeyTime, KeychainNames).
        .target(name: "PushSealKeyRecords", dependencies: ["PushSealCrypto", "PushSealWire", "PushSealKeychain", "PushSealJSON", "PushSealSystem"]),
        // PushSealDeviceKeys: the device's key items, manifest, keyring and revocation; no server store.
        .target(name: "PushSealDeviceKeys", dependencies: ["PushSealKeyRecords", "PushSealCrypto", "PushSealWire", "PushSealKeychain", "PushSealJSON", "PushSealSystem"]),
        // PushSealServerKeys: the server store protocols (ServerKeyStore and its refinements), keysets,
        // registrations, sender keys, device tokens, ServerKeyring, and the file keychain's KeyStore.
        .target(name: "PushSealServerKeys", dependencies: ["PushSealKeyRecords", "PushSealDeviceKeys", "PushSealCrypto", "PushSealWire", "PushSealKeychain", "PushSealJSON", "PushSealSystem"]),
        .target(name: "PushSealSender", dependencies: ["PushSealCrypto", "PushSealWire", "PushSealJSON", "PushSealSystem"]),
        .target(name: "PushSealExtension", dependencies: ["PushSealCrypto", "PushSealWire", "PushSealMediaFetch", "PushSealJSON", "PushSealSystem"]),
        // The keychain-backed key providers: the opening one (NotificationKeyProvider, the keys' fallback
        // reasons) on the device keys, the sealing ones (SealingKeyProvider) on the server keys.
        .target(name: "PushSealDeviceKeyProviders", dependencies: ["PushSealDeviceKeys", "PushSealKeyRecords", "PushSealCrypto", "PushSealWire", "PushSealKeychain", "PushSealSystem"]),
        .target(name: "PushSealServerKeyProviders", dependencies: ["PushSealServerKeys", "PushSealKeyRecords", "PushSealCrypto", "PushSealWire", "PushSealKeychain", "PushSealSystem"]),
        // Registration tokens (HS256 JWTs a backend mints for one recipient; the gateway verifies them): no CLI code.
        .target(name: "PushSealRegistrationTokens", dependencies: ["PushSealCrypto", "PushSealWire", "PushSealJSON", "PushSealSystem"]),
        // CLI support (arguments, help, output, errors): System and JSON only.
        .target(name: "PushSealCLI", dependencies: ["PushSealSystem", "PushSealJSON"]),
        // The extension's media network side: libcurl's C API through CCurlLazy, no Foundation.
        .target(name: "PushSealMediaFetch", dependencies: ["CCurlLazy", "PushSealSystem"]),
        // The APNs provider client: HTTP/2 on libnghttp2 over OpenSSL TLS, ES256 provider tokens, retries.
        .target(name: "PushSealAPNs", dependencies: ["PushSealCrypto", "PushSealJSON", "PushSealSystem", "CNghttp2", "CPushSealTLS"]),
        // HTTP/1.1 server on libmicrohttpd (thread pool + epoll, optional TLS) with strict request checks and a router.
        .target(name: "PushSealHTTP", dependencies: ["CMicroHTTPD", "CPushSealHTTPD", "PushSealJSON", "PushSealSystem"]),
        // push-gateway's API v1 (auth, rate limits, metrics, logs, routes) on PushSealHTTP; the store and outbox behind GatewayBackend.
        .target(name: "PushSealGateway", dependencies: ["PushSealHTTP", "PushSealServer", "PushSealRegistrationTokens", "PushSealRegistry", "PushSealCrypto", "PushSealJSON", "PushSealSystem"]),
        // The PostgreSQL server store (issue 15): libpq, keys wrapped under a key-encryption key.
        .target(name: "PushSealRegistry", dependencies: ["CLibPQ", "PushSealCrypto", "PushSealWire", "PushSealKeyRecords", "PushSealServerKeys", "PushSealSystem"]),
        // The composition layer (issue 23): store, sealer, registration import, APNs sending,
        // token invalidation and the outbox, from plain configuration; shared by the CLIs and the gateway.
        .target(name: "PushSealServer", dependencies: ["PushSealSender", "PushSealServerKeyProviders", "PushSealServerKeys", "PushSealKeyRecords", "PushSealWire",
                                                       "PushSealRegistry", "PushSealAPNs", "PushSealCrypto", "PushSealJSON", "PushSealSystem"]),
        // The one place --registry/--kek-file become a store (push-keys, push-seal; not push-open, which never links libpq).
        .target(name: "PushSealRegistryCLI", dependencies: ["PushSealCLI", "PushSealRegistry", "PushSealSystem"]),

        // Command-line tools: thin main.swift + one file a subcommand.
        .executableTarget(name: "push-seal", dependencies: ["PushSealCLI", "PushSealServer", "PushSealSender", "PushSealServerKeyProviders", "PushSealServerKeys", "PushSealKeyRecords", "PushSealWire", "PushSealCrypto", "PushSealJSON", "PushSealSystem", "PushSealRegistryCLI"]),
        // push-open's peak RSS with a 9 MB image must stay under 20 MiB (issue 28; iOS ends an
        // extension near 24 MB, and libcurl's ~30 libraries cost ~4.5 MiB of it), so on Linux it is
        // linked for memory: the Swift runtime, FoundationEssentials and Dispatch statically (the
        // shared libswiftCore & co. map ~8 MiB of pages at every start), by lld with packed
        // relative relocations (no 900 KB relocation table read at start), and with the functions
        // a run executes laid out together (link-order.txt, scripts/gen-push-open-order.sh), so
        // the pages the kernel maps around each fault hold code that runs. Only layout changes.
        // Release builds only (what `make bench` measures and what is deployed): the test bundle
        // links the tools' modules (CLIDeclarationTests), and no static Testing/XCTest exists.
        .executableTarget(name: "push-open", dependencies: ["PushSealCLI", "PushSealExtension", "PushSealDeviceKeyProviders", "PushSealKeyRecords", "PushSealKeychain", "PushSealWire", "PushSealCrypto", "PushSealJSON", "PushSealSystem"],
                          exclude: ["link-order.txt"],
                          linkerSettings: [.unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
                                                         "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/Sources/push-open/link-order.txt",
                                                         "-Xlinker", "--no-warn-symbol-ordering"], .when(platforms: [.linux], configuration: .release)),
                                           // What the shared FoundationEssentials names as its own dependencies.
                                           .linkedLibrary("_FoundationCollections", .when(platforms: [.linux], configuration: .release)),
                                           .linkedLibrary("_FoundationCShims", .when(platforms: [.linux], configuration: .release)),
                                           .linkedLibrary("swiftSynchronization", .when(platforms: [.linux], configuration: .release))]),
        .executableTarget(name: "push-keys", dependencies: ["PushSealCLI", "PushSealServer", "PushSealRegistrationTokens", "PushSealServerKeys", "PushSealDeviceKeys", "PushSealKeyRecords", "PushSealKeychain", "PushSealWire", "PushSealCrypto", "PushSealJSON", "PushSealSystem", "PushSealRegistry", "PushSealRegistryCLI"]),
        .executableTarget(name: "push-send", dependencies: ["PushSealCLI", "PushSealServer", "PushSealAPNs", "PushSealJSON", "PushSealSystem"]),
        .executableTarget(name: "push-gateway", dependencies: ["PushSealCLI", "PushSealGateway", "PushSealRegistrationTokens", "PushSealHTTP", "PushSealServer", "PushSealRegistry", "PushSealRegistryCLI", "PushSealJSON", "PushSealSystem"]),
        // Test helper for PushSealKeychainTests (multi-process and SIGKILL tests); not a product.
        .executableTarget(name: "keychain-stress", dependencies: ["PushSealKeychain", "PushSealCrypto"]),
        // Test helper for PushSealRegistryTests: sealing processes on one PostgreSQL registry; not a product.
        .executableTarget(name: "registry-stress", dependencies: ["PushSealRegistry", "PushSealServerKeys", "PushSealKeyRecords", "PushSealCrypto", "PushSealSystem"]),
        // Test helper for PushSealServerTests: one outbox worker in its own process (SIGKILL tests); not a product.
        .executableTarget(name: "outbox-stress", dependencies: ["PushSealServer", "PushSealRegistry", "PushSealAPNs", "PushSealSystem"]),
        // Examples/server: sealing from a server by library (prints the APNs request headers and payload).
        .executableTarget(name: "seal-server-example", dependencies: ["PushSealServer"],
                          path: "Examples/server/SealFromLibrary"),
        .executableTarget(name: "push-bench", dependencies: ["PushSealCLI", "PushSealCrypto", "PushSealWire", "PushSealSender", "PushSealExtension", "PushSealJSON", "PushSealSystem", "COpenSSL", "CSodium", "CPushSealSIMD"]),

        // Tests: one target per module; CLITests runs the built binaries. PushSealTestSupport holds
        // the helpers every test target shares (shared data lookup, seeded PRNG, expectCode,
        // runPython, TemporaryDirectory); not a product.
        .target(name: "PushSealTestSupport", dependencies: ["PushSealSystem"], path: "Tests/PushSealTestSupport"),
        .testTarget(name: "PushSealSystemTests", dependencies: ["PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealJSONTests", dependencies: ["PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealCryptoTests", dependencies: ["PushSealCrypto", "COpenSSL", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealWireTests", dependencies: ["PushSealWire", "PushSealCrypto", "PushSealKeychain", "PushSealDeviceKeys", "PushSealKeyRecords", "CPushSealSIMD", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealKeychainTests", dependencies: ["PushSealKeychain", "PushSealCrypto", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealKeysTests", dependencies: ["PushSealServerKeys", "PushSealDeviceKeys", "PushSealKeyRecords", "PushSealKeychain", "PushSealWire", "PushSealCrypto", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealSenderTests", dependencies: ["PushSealSender", "PushSealServerKeyProviders", "PushSealServerKeys", "PushSealDeviceKeys", "PushSealKeyRecords", "PushSealCrypto", "PushSealKeychain", "PushSealWire", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealExtensionTests", dependencies: ["PushSealExtension", "PushSealMediaFetch", "PushSealSender", "PushSealDeviceKeyProviders", "PushSealServerKeys", "PushSealDeviceKeys", "PushSealKeyRecords", "PushSealCrypto", "PushSealKeychain", "PushSealWire", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealRegistryTests", dependencies: ["PushSealRegistry", "PushSealServerKeyProviders", "PushSealServerKeys", "PushSealDeviceKeys", "PushSealKeyRecords", "PushSealKeychain", "PushSealWire", "PushSealCrypto", "PushSealJSON", "PushSealSystem"]),
        .testTarget(name: "CLITests", dependencies: ["PushSealWire", "PushSealCLI", "PushSealServerKeys", "PushSealDeviceKeys", "PushSealKeyRecords", "PushSealKeychain", "PushSealCrypto", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        // The tools' option declarations, read in process (the executables imported @testable).
        .testTarget(name: "CLIDeclarationTests", dependencies: ["PushSealCLI", "PushSealAPNs", "PushSealSystem", "push-seal", "push-open", "push-keys", "push-send", "push-gateway"]),
        // The envelope seam: a test-only second enc_alg through the real sender and extension.
        .testTarget(name: "EnvelopeSeamTests", dependencies: ["PushSealWire", "PushSealCrypto", "PushSealSender", "PushSealExtension", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealServerTests", dependencies: ["PushSealServer", "PushSealAPNs", "PushSealSender", "PushSealRegistry", "PushSealDeviceKeys", "PushSealKeychain", "PushSealCrypto", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealRegistrationTokensTests", dependencies: ["PushSealRegistrationTokens", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealAPNsTests", dependencies: ["PushSealAPNs", "PushSealCrypto", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealHTTPTests", dependencies: ["PushSealHTTP", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
        .testTarget(name: "PushSealGatewayTests", dependencies: ["PushSealGateway", "PushSealRegistrationTokens", "PushSealHTTP", "PushSealServer", "PushSealRegistry", "PushSealDeviceKeys", "PushSealCrypto", "PushSealAPNs", "PushSealJSON", "PushSealSystem", "PushSealTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// Every Swift target (strict concurrency is implied by Swift 6 mode):
// - ExistentialAny keeps existential types explicit;
// - InternalImportsByDefault makes every `import` internal, so a module's public API names only
//   what it re-exports on purpose (`public import`);
// - MemberImportVisibility makes every file import the modules whose members it uses, so the
//   `dependencies:` above are the real graph (no member is reached through another import).
let cTargets: Set<String> = ["CPushSealSIMD", "CCurlLazy", "CPushSealTLS", "CPushSealHTTPD"]
for target in package.targets where target.type != .system && !cTargets.contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    target.swiftSettings = settings
}
