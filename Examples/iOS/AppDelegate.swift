// PushSeal reference app-side handler for a sealed retract (docs/FORMAT.md §5.1), iOS 17+.
//
// A retract arrives as a background push (`aps` is exactly {"content-available": 1}, no alert,
// no mutable-content; apns-push-type background, priority 5), so iOS hands it to the app, not to
// the Notification Service Extension. The app opens it with the same key items and checks as
// the extension (`NotificationService.receive`: key by key id, pinned sender keys in auth mode,
// a retired key, `exp`, the shared replay guard in the App Group container), accepts only a
// retract, and removes the delivered notifications whose sealed id — `userInfo["pushseal-id"]`,
// put there by the extension — is listed. It never shows anything. A retract that does not open
// removes nothing. App target files: this one, NotificationService.swift,
// PushSealDeviceKeys.swift, PushSealWire.swift; the app's Info.plist needs the
// `remote-notification` background mode and the PushSeal keys of Info.plist-snippet.xml, and its
// entitlements the same keychain access group and App Group as the extension.
//
// Limits (Apple's, not PushSeal's): iOS may delay, coalesce or drop background pushes (Low
// Power Mode, a force-quit app, its background budget). So at each launch the app should also
// ask its own server for the ids retracted since its last sync and remove those the same way
// (`removeDelivered(ids:)` below). The emulation of this handler is `push-open --as-app`.
import Foundation
import os
import UIKit
@preconcurrency import UserNotifications

final class AppDelegate: UIResponder, UIApplicationDelegate {
    private let log = Logger(subsystem: "pushseal", category: "app")

    /// The background path: open a retract, remove what it lists, report to iOS.
    func application(_ application: UIApplication, didReceiveRemoteNotification userInfo: [AnyHashable: Any],
                     fetchCompletionHandler completionHandler: @escaping (UIBackgroundFetchResult) -> Void) {
        let now = Int64(Date().timeIntervalSince1970)
        let appID = Bundle.main.object(forInfoDictionaryKey: PushSealConfig.appIDInfoKey) as? String
        let plaintext: Plaintext
        do {
            plaintext = try NotificationService.receive(userInfo, appID: appID, now: now, expecting: .retract)
        } catch let refusal as Refusal {
            // Nothing removed; only the code is logged (never plaintext).
            log.error("stage=retract event=refused code=\(refusal.code, privacy: .public)")
            return completionHandler(.noData)
        } catch {
            log.error("stage=retract event=refused code=unexpected")
            return completionHandler(.noData)
        }
        Self.removeDelivered(ids: plaintext.ids) { removedCount in
            self.log.info("stage=retract event=ok removed=\(removedCount, privacy: .public)")
            completionHandler(removedCount > 0 ? .newData : .noData)
        }
    }

    /// Removes the delivered notifications whose sealed id is one of `ids`; ids that match
    /// nothing are already gone. Calls `done` with the number removed.
    static func removeDelivered(ids: [String], done: @escaping @Sendable (Int) -> Void) {
        let wanted = Set(ids)
        let center = UNUserNotificationCenter.current()
        center.getDeliveredNotifications { delivered in
            let identifiers = delivered.filter { note in
                guard let id = note.request.content.userInfo[PushSealConfig.sealedIDUserInfoKey] as? String else { return false }
                return wanted.contains(id)
            }.map(\.request.identifier)
            if !identifiers.isEmpty { center.removeDeliveredNotifications(withIdentifiers: identifiers) }
            done(identifiers.count)
        }
    }
}
