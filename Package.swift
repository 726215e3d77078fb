// swift-tools-version:6.0
// PushSeal: end-to-end encrypted push notifications for iOS apps.
// Layers (arrows point down only): CLIs -> Sender / Extension / Keys -> Keychain -> Format -> Crypto -> C libraries.
import PackageDescription

let package = Package(
    name: "PushSeal",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "PushSealCrypto", targets: ["PushSealCrypto"]),
        .library(name: "PushSealFormat", targets: ["PushSealFormat"]),
        .library(name: "PushSealKeychain", targets: ["PushSealKeychain"]),
        .library(name: "PushSealKeys", targets: ["PushSealKeys"]),
        .library(name: "PushSealSender", targets: ["PushSealSender"]),
        .library(name: "PushSealExtension", targets: ["PushSealExtension"]),
        // The extension's media network side (libcurl's C API, no Foundation), loaded with dlopen
        // only when a notification has media, so push-open does not link libcurl at startup.
        .library(name: "PushSealAPNs", targets: ["PushSealAPNs"]),
        .library(name: "PushSealMediaFetch", type: .dynamic, targets: ["PushSealMediaFetch"]),
        .executable(name: "push-seal", targets: ["push-seal"]),
        .executable(name: "push-open", targets: ["push-open"]),
        .executable(name: "push-keys", targets: ["push-keys"]),
        .executable(name: "push-send", targets: ["push-send"]),
        .executable(name: "push-bench", targets: ["push-bench"]),
    ],
    targets: [
        // System libraries (Debian: libssl-dev, libsodium-dev, libcurl4-openssl-dev).
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"]), .brew(["libsodium"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"]), .brew(["curl"])]),

        // Our one C target: the sender's two byte loops (base64, JSON string scan) vectorized
        // for x86-64 with a run-time CPU check; public data only (Sources/CPushSealSIMD).
        .target(name: "CPushSealSIMD"),

        // Libraries.
        .target(name: "PushSealCrypto", dependencies: ["COpenSSL", "CSodium"]),
        .target(name: "PushSealFormat", dependencies: ["PushSealCrypto", "CSodium", "CPushSealSIMD"]),
        .target(name: "PushSealKeychain", dependencies: ["PushSealCrypto", "PushSealFormat", "CSodium"]),
        .target(name: "PushSealKeys", dependencies: ["PushSealCrypto", "PushSealFormat", "PushSealKeychain", "CSodium"]),
        .target(name: "PushSealSender", dependencies: ["PushSealCrypto", "PushSealFormat", "PushSealKeys", "PushSealKeychain"]),
        .target(name: "PushSealExtension", dependencies: ["PushSealCrypto", "PushSealFormat", "PushSealKeychain", "PushSealKeys"]),
        // PushSealKeychain only for PosixLock (Output guards its record of a failed stdout write).
        .target(name: "PushSealCLI", dependencies: ["PushSealFormat", "PushSealKeychain"]),
        .target(name: "PushSealMediaFetch", dependencies: ["CCurl"]),
        // The APNs provider client: HTTP/2 on libcurl (nghttp2), ES256 provider tokens, retries.
        .target(name: "PushSealAPNs", dependencies: ["PushSealCrypto", "PushSealFormat", "CCurl"]),

        // Command-line tools: thin main.swift + one file a subcommand.
        .executableTarget(name: "push-seal", dependencies: ["PushSealCLI", "PushSealSender", "PushSealKeys", "PushSealKeychain"]),
        .executableTarget(name: "push-open", dependencies: ["PushSealCLI", "PushSealExtension", "PushSealKeys", "PushSealKeychain"]),
        .executableTarget(name: "push-send", dependencies: ["PushSealCLI", "PushSealAPNs", "PushSealFormat"]),
        .executableTarget(name: "push-keys", dependencies: ["PushSealCLI", "PushSealKeys", "PushSealKeychain"]),
        // Test helper for PushSealKeychainTests (multi-process and SIGKILL tests); not a product.
        .executableTarget(name: "keychain-stress", dependencies: ["PushSealKeychain", "PushSealCrypto"]),
        // Examples/server: sealing from a server by library (prints the APNs request headers and payload).
        .executableTarget(name: "seal-server-example", dependencies: ["PushSealSender", "PushSealKeys", "PushSealKeychain", "PushSealFormat"],
                          path: "Examples/server/SealFromLibrary"),
        .executableTarget(name: "push-bench", dependencies: ["PushSealCrypto", "PushSealFormat", "PushSealSender", "PushSealExtension", "COpenSSL", "CSodium", "CPushSealSIMD"]),

        // Tests: one target per module; CLITests runs the built binaries.
        .testTarget(name: "PushSealCryptoTests", dependencies: ["PushSealCrypto", "COpenSSL"]),
        .testTarget(name: "PushSealFormatTests", dependencies: ["PushSealFormat", "PushSealCrypto", "PushSealKeychain", "CPushSealSIMD"]),
        .testTarget(name: "PushSealKeychainTests", dependencies: ["PushSealKeychain", "PushSealCrypto"]),
        .testTarget(name: "PushSealKeysTests", dependencies: ["PushSealKeys", "PushSealKeychain", "PushSealFormat", "PushSealCrypto"]),
        .testTarget(name: "PushSealSenderTests", dependencies: ["PushSealSender", "PushSealKeys", "PushSealKeychain", "PushSealFormat"]),
        .testTarget(name: "PushSealExtensionTests", dependencies: ["PushSealExtension", "PushSealMediaFetch", "PushSealSender", "PushSealKeys", "PushSealKeychain", "PushSealFormat"]),
        .testTarget(name: "PushSealAPNsTests", dependencies: ["PushSealAPNs", "PushSealCrypto", "PushSealFormat"],
                    exclude: []),
        .testTarget(name: "CLITests", dependencies: ["PushSealFormat", "PushSealCLI", "PushSealKeys", "PushSealKeychain", "PushSealCrypto"]),
    ],
    swiftLanguageModes: [.v6]
)

// Every Swift target: strict concurrency is implied by Swift 6 mode; this upcoming feature keeps existential types explicit.
for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
