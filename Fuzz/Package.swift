// swift-tools-version:6.0
// libFuzzer target for the receive path (issue #7). Separate package so the main build never
// needs `-sanitize=fuzzer`. Build and run with scripts/fuzz.sh (or `make fuzz`):
//   swift build -c release -Xswiftc -sanitize=fuzzer -Xlinker --allow-multiple-definition
import Foundation
import PackageDescription

// A path dependency's identity is its directory's name (e.g. `pushseal`, or a worktree's name).
let rootIdentity = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .lastPathComponent.lowercased()

let package = Package(
    name: "PushSealFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(path: "..")],
    targets: [
        .executableTarget(name: "receive-fuzz", dependencies: [
            .product(name: "PushSealCrypto", package: rootIdentity),
            .product(name: "PushSealWire", package: rootIdentity),
            .product(name: "PushSealJSON", package: rootIdentity),
            .product(name: "PushSealExtension", package: rootIdentity),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
