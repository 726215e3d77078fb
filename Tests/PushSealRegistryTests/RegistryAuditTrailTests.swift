import Foundation
import PushSealRegistry
import PushSealServerKeys
import Testing

/// `push-keys audit` on the registry (issue 24): the audit lines of one recipient, oldest first.
@Suite struct RegistryAuditTrailTests {
    static let app = "com.example.app"

    @Test func aRecipientsAuditLinesInOrder() throws {
        let (store, _) = try Registry.store()
        try store.addDeviceToken("a1a1", appID: Self.app, recipient: "alice", environment: .production, registeredAtMs: 1_000)
        try store.addDeviceToken("b2b2", appID: Self.app, recipient: "bob", environment: .production, registeredAtMs: 1_000)
        _ = try store.invalidateDeviceToken("a1a1", appID: Self.app, unregisteredAtMs: 2_000)
        let lines = try store.auditLines(recipient: "alice", appID: Self.app)
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.first?.contains("\"addDeviceToken\"") == true && lines.last?.contains("\"removeDeviceToken\"") == true && lines.last?.contains("unregistered") == true)
        #expect(try store.auditLines(recipient: "alice", appID: "com.example.other").isEmpty)
        #expect(try store.auditLines(recipient: "bob", appID: nil).count == 1)
    }
}
