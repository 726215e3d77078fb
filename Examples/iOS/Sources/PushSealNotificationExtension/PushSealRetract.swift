// The app-side half of a sealed retract (docs/FORMAT.md §5.1), in the module the app shares with
// its extension so that both open with one `NotificationService.receive` and the same key items
// (the app target links PushSealNotificationExtension for this; AppDelegate.swift calls it from
// `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`).
import Foundation
import os
@preconcurrency import UserNotifications

/// Opens a retract and removes the delivered notifications it lists; never shows anything.
public enum PushSealRetract {
    private static let log = Logger(subsystem: "pushseal", category: "retract")

    /// Handles one background push: `receive(…, expecting: .retract)` (key by key id, pinned
    /// sender keys in auth mode, a retired key, `exp`, the shared replay guard), then removes the
    /// delivered notifications whose `userInfo["pushseal-id"]` is listed. A retract that does not
    /// open removes nothing (its code is logged, never plaintext).
    /// - Parameters:
    ///   - userInfo: the background push as delivered.
    ///   - done: the number of notifications removed, or `nil` when the push was refused.
    public static func handle(_ userInfo: [AnyHashable: Any], done: @escaping @Sendable (Int?) -> Void) {
        let now = Int64(Date().timeIntervalSince1970)
        let appID = Bundle.main.object(forInfoDictionaryKey: PushSealConfig.appIDInfoKey) as? String
        let plaintext: Plaintext
        do {
            plaintext = try NotificationService.receive(userInfo, appID: appID, now: now, expecting: .retract)
        } catch let refusal as Refusal {
            log.error("stage=retract event=refused code=\(refusal.code, privacy: .public)")
            return done(nil)
        } catch {
            log.error("stage=retract event=refused code=unexpected")
            return done(nil)
        }
        removeDelivered(ids: plaintext.ids, done: done)
    }

    /// Removes the delivered notifications whose sealed id is one of `ids` (ids that match
    /// nothing are already gone); also what the app calls at launch with the ids its server
    /// says were retracted since the last sync (iOS may delay or drop background pushes).
    public static func removeDelivered(ids: [String], done: @escaping @Sendable (Int) -> Void) {
        let wanted = Set(ids)
        UNUserNotificationCenter.current().getDeliveredNotifications { delivered in
            let identifiers = delivered.filter { note in
                guard let id = note.request.content.userInfo[PushSealConfig.sealedIDUserInfoKey] as? String else { return false }
                return wanted.contains(id)
            }.map(\.request.identifier)
            if !identifiers.isEmpty { UNUserNotificationCenter.current().removeDeliveredNotifications(withIdentifiers: identifiers) }
            log.info("stage=retract event=ok removed=\(identifiers.count, privacy: .public)")
            done(identifiers.count)
        }
    }
}
