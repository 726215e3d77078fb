import PushSealTestSupport
import PushSealJSON
import Foundation
import PushSealCrypto
import PushSealWire
import Testing
@testable import PushSealExtension

/// The app's background handler for retracts and the emulated notification center (issue 29),
/// wire format v1 (the v2 auth-mode cases run through the built tools in RetractCLITests).
@Suite struct RetractHandlerTests {
    static let appID = "com.example.app"
    static let now: Int64 = 1_800_000_000

    struct Device {
        let key = SecretBytes(randomByteCount: 32)
        let container: URL
        let logger = CollectingLogger()
        init() throws { container = try makeTemporaryDirectory() }

        func configuration(key: SecretBytes? = nil, container: URL?? = nil) -> DecryptingServiceConfiguration {
            DecryptingServiceConfiguration(appID: RetractHandlerTests.appID, keyProvider: MemoryKeyProvider(keys: ["k1": key ?? self.key]),
                                           containerDirectory: container ?? self.container, now: { RetractHandlerTests.now })
        }

        var center: DeliveredNotificationCenter { DeliveredNotificationCenter(containerDirectory: container) }

        /// Shows a display message through the extension and records it, as push-open does.
        func show(id: String, identifier: String) throws {
            let host = ExtensionHost(budgetSeconds: 5, logger: logger, makeExtension: DecryptingServiceExtension.factory(configuration()))
            let r = host.run(UNNotificationRequest(identifier: identifier, apnsPayload: try sealPayload(["title": "T", "id": .string(id)], key: key)))
            #expect(r.outcome == .decrypted && r.content?.userInfo["pushseal-id"] == .string(id))
            try center.record(.init(identifier: identifier, deliveredAt: RetractHandlerTests.now, userInfo: r.content?.userInfo ?? [:]))
        }

        func retract(_ ids: [String], id: String = UUID().uuidString, exp: Int64? = nil, key: SecretBytes? = nil) throws -> JSONValue {
            var p: JSONObject = ["kind": "retract", "ids": .array(ids.map(JSONValue.string)), "id": .string(id)]
            if let exp { p["exp"] = .integer(exp) }
            return try sealPayload(p, key: key ?? self.key)
        }

        func cleanUp() { try? FileManager.default.removeItem(at: container) }
    }

    @Test func aRetractRemovesWhatItListsAndNothingWhenItDoesNotOpen() throws {
        let d = try Device()
        defer { d.cleanUp() }
        for n in 1...3 { try d.show(id: "n-\(n)", identifier: "r-\(n)") }
        let handler = RetractHandler(configuration: d.configuration(), logger: d.logger)

        // Does not open: another key, expired, a display message. Nothing removed, and the
        // refusals before the replay guard do not use up the retract's id.
        let wrongKey = handler.handle(try d.retract(["n-1"], key: SecretBytes(randomByteCount: 32)))
        #expect(wrongKey.outcome == .refused && wrongKey.reason == "authenticationFailed" && wrongKey.removed.isEmpty)
        let expired = handler.handle(try d.retract(["n-1"], exp: Self.now))
        #expect(expired.reason == "expired" && expired.fetchResult == "noData")
        let display = handler.handle(try sealPayload(["title": "T", "id": "d-1"], key: d.key))
        #expect(display.reason == "wrongKind:display")
        #expect(try d.center.delivered().compactMap(\.id) == ["n-1", "n-2", "n-3"])

        let payload = try d.retract(["n-1", "n-3", "gone"], id: "x-1")
        let done = handler.handle(payload)
        #expect(done.outcome == .retracted && done.removed.map(\.identifier) == ["r-1", "r-3"] && done.notFound == ["gone"])
        #expect(done.fetchResult == "newData")
        #expect(try d.center.delivered().compactMap(\.id) == ["n-2"])
        let replayed = handler.handle(payload)
        #expect(replayed.outcome == .refused && replayed.reason == "replayed")
        #expect(try d.center.delivered().compactMap(\.id) == ["n-2"])
        #expect(!d.logger.lines.joined().contains("n-2"), "ids are never logged")

        // Without an App Group container there is no notification center.
        let noContainer = RetractHandler(configuration: d.configuration(container: .some(nil))).handle(try d.retract(["n-2"]))
        #expect(noContainer.reason == RetractHandler.centerUnavailable && noContainer.fetchResult == "failed")
    }

    @Test func theExtensionNeverShowsARetractAndLeavesItsIDForTheApp() throws {
        let d = try Device()
        defer { d.cleanUp() }
        try d.show(id: "n-1", identifier: "r-1")
        let payload = try d.retract(["n-1"], id: "x-9")
        let host = ExtensionHost(budgetSeconds: 5, logger: d.logger, makeExtension: DecryptingServiceExtension.factory(d.configuration()))
        let shown = host.run(UNNotificationRequest(identifier: "r-2", apnsPayload: payload))
        #expect(shown.outcome == .original && shown.reason == "wrongKind:retract" && shown.content?.title == "New message")
        let applied = RetractHandler(configuration: d.configuration()).handle(payload)
        #expect(applied.outcome == .retracted && applied.removed.map(\.identifier) == ["r-1"])
    }

    @Test func theCenterIsBoundedReplacesByIdentifierAndFailsOnADamagedStore() throws {
        let d = try Device()
        defer { d.cleanUp() }
        let center = DeliveredNotificationCenter(containerDirectory: d.container, capacity: 3)
        for n in 1...5 { try center.record(.init(identifier: "r-\(n)", deliveredAt: Int64(n), userInfo: ["pushseal-id": .string("n-\(n)")])) }
        #expect(try center.delivered().map(\.identifier) == ["r-3", "r-4", "r-5"])
        try center.record(.init(identifier: "r-4", deliveredAt: 9, userInfo: [:]))
        #expect(try center.delivered().map(\.identifier) == ["r-3", "r-5", "r-4"])
        #expect(try center.delivered().last?.id == nil)
        let attributes = try FileManager.default.attributesOfItem(atPath: center.fileURL.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        try Data("{".utf8).write(to: center.fileURL)
        #expect(throws: ExtensionError.self) { try center.delivered() }
    }
}
