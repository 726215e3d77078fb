// swift-tools-version:6.0
// The PushSeal iOS reference as a Swift package an iOS project depends on (File > Add Package
// Dependencies… > Add Local…, or by URL with the path Examples/iOS): Apple frameworks only
// (CryptoKit, Security, UserNotifications, BackgroundTasks, os), no third-party dependency.
// Products and modules have the same names (`import PushSealApp`, `import PushSealNotificationExtension`;
// both re-export PushSealDevice):
//   PushSealApp                   → the app target: key making, rotation, registration upload,
//                                   sender key pins and revocations (PushSealKeyLifecycle).
//   PushSealNotificationExtension → the Notification Service Extension target: decrypts
//                                   (subclass `NotificationService`, see README.md).
// Both share PushSealDevice (the keychain layout of docs/keychain.md and the wire helpers), which
// uses only APIs allowed in app extensions. Checked on Linux by `swift package dump-package`
// (the manifest) and LinuxCheck/check.sh (the sources, against stubs), both in `make test`.
import PackageDescription

let package = Package(
    name: "PushSealiOS",
    platforms: [.iOS(.v17)],
    products: [
        .library(name: "PushSealApp", targets: ["PushSealApp"]),
        .library(name: "PushSealNotificationExtension", targets: ["PushSealNotificationExtension"]),
    ],
    targets: [
        .target(name: "PushSealDevice", path: "Sources/PushSealDevice"),
        .target(name: "PushSealNotificationExtension", dependencies: ["PushSealDevice"], path: "Sources/PushSealNotificationExtension"),
        .target(name: "PushSealApp", dependencies: ["PushSealDevice"], path: "Sources/PushSealApp"),
    ],
    swiftLanguageModes: [.v6]
)
