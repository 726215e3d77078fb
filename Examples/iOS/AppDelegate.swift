// PushSeal reference app-side handler for a sealed retract (docs/FORMAT.md §5.1), iOS 17+: the
// lines an app adds to its own UIApplicationDelegate (this file is not in the package: like the
// extension's one-line subclass, it belongs to the app target, which links the products
// PushSealApp and PushSealNotificationExtension).
//
// A retract arrives as a background push (`aps` is exactly {"content-available": 1}, no alert,
// no mutable-content; apns-push-type background, priority 5), so iOS hands it to the app, not to
// the Notification Service Extension. `PushSealRetract.handle` opens it with the extension's own
// `NotificationService.receive` — the same key items, pinned sender keys, `exp` and replay guard —
// accepts only a retract, and removes the delivered notifications whose sealed id
// (`userInfo["pushseal-id"]`, put there by the extension) is listed. It never shows anything; a
// retract that does not open removes nothing. The app needs Background Modes ▸ Remote
// notifications and the extension's keychain access group and App Group.
//
// Limits (Apple's, not PushSeal's): iOS may delay, coalesce or drop background pushes (Low
// Power Mode, a force-quit app, its background budget). At each launch, also ask your server for
// the ids retracted since the last sync and pass them to `PushSealRetract.removeDelivered(ids:done:)`.
// The emulation of this handler is `push-open --as-app`.
import PushSealNotificationExtension
import UIKit

final class AppDelegate: UIResponder, UIApplicationDelegate {
    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
                     fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void) {
        PushSealRetract.handle(userInfo) { removed in
            completionHandler((removed ?? 0) > 0 ? .newData : .noData)
        }
    }
}
