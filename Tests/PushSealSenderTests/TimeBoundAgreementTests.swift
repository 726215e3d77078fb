import PushSealKeys
import PushSealSender
import Testing

/// The sender and the key tools bound times alike: PushSealKeys cannot import PushSealSender (the
/// sender depends on it), so each declares the bound, and this test keeps the two equal.
@Suite struct TimeBoundAgreementTests {
    @Test func senderAndKeyToolsShareTheLatestTime() {
        #expect(KeyStore.maxTimeSeconds == OutgoingNotification.maxTimeSeconds)
    }
}
