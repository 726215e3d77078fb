// PushSeal registration on a real iPhone (app target only; iOS 17+): the app uploads its
// version 2 registration record (FORMAT.md §V.6) with its APNs device token and the sender key
// ids it has pinned (POST devices), pins the server's sender keys (GET sender-keys) and applies
// revocations (GET revocations), at the moments docs/registration.md's lifecycle names.
//
// The endpoints are the gateway's (`POST /v1/devices`, `GET /v1/sender-keys`,
// `GET /v1/revocations`) or your backend's. POST devices is authorized by a registration token
// (docs/registration.md): your backend mints it after its own login for the recipient IT chose,
// and the app passes it as the bearer. The record holds no secret; the private key never leaves
// the keychain (PushSealDeviceKeys.swift).
import BackgroundTasks
import Foundation
import os
@_exported import PushSealDevice

/// Talks to the app's own API: registration upload, sender key and revocation download.
public struct PushSealRegistration: Sendable {
    public struct Configuration: Sendable {
        /// The app's bundle id, which is also the APNs topic and the app id of the records.
        public var appID: String
        /// The gateway (or your backend), e.g. `https://push.example.com/v1/`: POST `devices`
        /// takes the upload; GET `sender-keys` and `revocations` return JSON arrays of records
        /// (FORMAT.md §V.6, §V.12).
        public var apiBaseURL: URL
        /// The bearer of each request, fetched fresh: for POST `devices` a registration token
        /// your backend minted for this installation after the app's login (docs/registration.md;
        /// `push-keys registration-token` or any JWT library), for the GETs whatever the
        /// endpoint asks (the same token does). Never a PushSeal key. The gateway
        /// (`push-gateway serve --registration-token-secret`) takes a token until its `exp`;
        /// `401 invalidRegistrationToken` means fetch a new one from your backend.
        public var bearerToken: @Sendable () async throws -> String

        public init(appID: String, apiBaseURL: URL, bearerToken: @escaping @Sendable () async throws -> String) {
            self.appID = appID
            self.apiBaseURL = apiBaseURL
            self.bearerToken = bearerToken
        }
    }

    /// Why a request failed: `notSignedIn`, `http` (status code), `malformedResponse`.
    public struct Failure: Error, CustomStringConvertible {
        public let code: String
        public let httpStatus: Int?
        public var description: String { httpStatus.map { "\(code) (HTTP \($0))" } ?? code }
    }

    public let configuration: Configuration

    public init(configuration: Configuration) { self.configuration = configuration }

    /// The JSON body of POST `devices`: the record exactly as FORMAT.md §V.6 gives it, the APNs
    /// device token in hex (as APNs' HTTP/2 API takes it in the path), the environment the
    /// token belongs to, and the sender key ids this device accepts now (so the server counts
    /// who is ready before it promotes a new sender key: `push-keys sender status`). What
    /// `push-keys register` and the gateway accept (docs/registration.md).
    public struct Upload: Encodable {
        public var registration: PushSealDeviceKeys.RegistrationRecord
        public var apnsDeviceToken: String
        /// `development` (Xcode builds) or `production` (TestFlight, App Store).
        public var apnsEnvironment: String
        public var pinnedSenderKeyIds: [String]
    }

    /// Uploads `record` with `deviceToken` and the pinned sender key ids; returns when the server
    /// answered 2xx (it has imported the public key and maps it to this installation, so it
    /// may seal to it from now on).
    /// - Throws: `Failure`, `URLError`, or what `bearerToken` throws.
    public func register(_ record: PushSealDeviceKeys.RegistrationRecord, deviceToken: Data) async throws {
        #if DEBUG
        let environment = "development"
        #else
        let environment = "production"
        #endif
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let pinned = try PushSealDeviceKeys.usableSenderKeyIDs(appID: configuration.appID)
        let body = try encoder.encode(Upload(registration: record, apnsDeviceToken: PushSealWire.hexString(deviceToken),
                                             apnsEnvironment: environment, pinnedSenderKeyIds: pinned))
        _ = try await send("devices", method: "POST", body: body)
    }

    /// Downloads the app's sender key records and pins each (PushSealDeviceKeys.pinSender): a
    /// new sender key is pinned next to the old one before the server switches to it.
    /// - Returns: the sender key ids pinned.
    public func refreshSenderKeys() async throws -> [String] {
        try await records("sender-keys").map { try PushSealDeviceKeys.pinSender(recordJSON: $0, appID: configuration.appID) }
    }

    /// Downloads revocation records and applies them (key id → disabled).
    /// - Returns: the key ids disabled on this device.
    public func refreshRevocations() async throws -> [String] {
        try await records("revocations").flatMap { try PushSealDeviceKeys.importRevocation(recordJSON: $0, appID: configuration.appID) }
    }

    /// GET `path`: a JSON array of record objects, each returned as its own JSON bytes.
    private func records(_ path: String) async throws -> [Data] {
        let data = try await send(path, method: "GET", body: nil)
        guard let array = try? JSONSerialization.jsonObject(with: data) as? [Any] else {
            throw Failure(code: "malformedResponse", httpStatus: nil)
        }
        return try array.map { try JSONSerialization.data(withJSONObject: $0) }
    }

    private func send(_ path: String, method: String, body: Data?) async throws -> Data {
        let token = try await configuration.bearerToken()
        guard !token.isEmpty else { throw Failure(code: "notSignedIn", httpStatus: nil) }
        var request = URLRequest(url: configuration.apiBaseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = body
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw Failure(code: "malformedResponse", httpStatus: nil) }
        guard (200..<300).contains(http.statusCode) else { throw Failure(code: "http", httpStatus: http.statusCode) }
        return data
    }
}

/// Key lifecycle of the app (docs/registration.md "The app's lifecycle"):
/// - first registration and every registration (`deviceTokenDidChange`): pin the sender keys,
///   apply revocations, then upload — so the first push after install already decrypts;
/// - app launch (`appDidLaunch`): the same refresh at most once a day;
/// - a background "keys changed" push (`handleKeysChangedPush`): the refresh at once;
/// - every 30 days (`BGAppRefreshTask`): device key rotation, then the refresh;
/// - after a refresh that changed the pins, the registration is uploaded again so the server
///   knows this device is ready for the next sender key; retired sender keys are unpinned after
///   their `notAfter` (`PushSealDeviceKeys.prune`).
///
/// Order of a rotation (never a moment without a key the server can seal to and the device can
/// open; security review G13): make the new pair (pending) → register it → only once the
/// server accepted it, promote it (the older key becomes decryptOnly for 30 days, retired now)
/// → prune keys past their grace. If the upload fails, the old key stays primary and the
/// pending one is registered again next time.
public enum PushSealKeyLifecycle {
    /// The background task's identifier: `<bundle id>.pushseal.rotate`, derived from the app's
    /// bundle id, to be listed in Info.plist's `BGTaskSchedulerPermittedIdentifiers`
    /// (App-Info.plist-snippet.xml). `registerBackgroundRotation` throws when it is not.
    public static var rotationTaskIdentifier: String { (Bundle.main.bundleIdentifier ?? "unknown-bundle-id") + rotationTaskSuffix }
    /// What follows the bundle id in ``rotationTaskIdentifier``.
    public static let rotationTaskSuffix = ".pushseal.rotate"
    /// 30 days, in seconds.
    public static let rotationPeriodSeconds: TimeInterval = 30 * 24 * 60 * 60
    /// At most one refresh on launch per day, in seconds.
    public static let launchRefreshIntervalSeconds: Int64 = 24 * 60 * 60
    /// The member of a background push (`content-available: 1`) that says the app's sender keys
    /// or revocations changed: `{"aps":{"content-available":1},"pushsealKeysChanged":1}`.
    public static let keysChangedPushKey = "pushsealKeysChanged"
    /// Where the app keeps its APNs device token between launches (not a secret).
    public static let deviceTokenDefaultsKey = "PushSealAPNsDeviceToken"
    /// When the last refresh succeeded (Unix seconds, device clock).
    public static let lastRefreshDefaultsKey = "PushSealLastKeyRefresh"
    private static let log = Logger(subsystem: "pushseal", category: "registration")

    /// Why the lifecycle cannot run: `taskIdentifierNotPermitted` (Info.plist lacks the
    /// identifier, or iOS refused it) — a configuration error the app must surface, not swallow.
    public struct Problem: Error, CustomStringConvertible {
        public let code: String
        public let identifier: String
        public var description: String { "\(code): \(identifier) (add it to BGTaskSchedulerPermittedIdentifiers)" }
    }

    /// Call from `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`: remembers the
    /// token, pins the sender keys and applies revocations, then registers the current key with
    /// it (a first launch makes the key). Throws so the app sees a failed registration.
    public static func deviceTokenDidChange(_ token: Data, registration: PushSealRegistration) async throws {
        UserDefaults.standard.set(token, forKey: deviceTokenDefaultsKey)
        try await refreshKeys(registration: registration, now: PushSealDeviceKeys.unixNow(), reRegister: false)
        try await registerCurrentKey(registration: registration, deviceToken: token)
    }

    /// Call from `application(_:didFinishLaunchingWithOptions:)` (after
    /// `registerBackgroundRotation`): refreshes the sender keys and revocations if the last
    /// refresh is more than a day old.
    /// - Returns: whether a refresh ran.
    @discardableResult
    public static func appDidLaunch(registration: PushSealRegistration, now: Int64 = PushSealDeviceKeys.unixNow()) async throws -> Bool {
        let last = Int64(UserDefaults.standard.integer(forKey: lastRefreshDefaultsKey))
        guard last == 0 || now - last >= launchRefreshIntervalSeconds || now < last else { return false }
        try await refreshKeys(registration: registration, now: now, reRegister: true)
        return true
    }

    /// Call from `application(_:didReceiveRemoteNotification:fetchCompletionHandler:)`: a push
    /// carrying ``keysChangedPushKey`` refreshes the sender keys and revocations at once.
    /// - Returns: `nil` when the push is not a "keys changed" push; else whether it succeeded.
    public static func handleKeysChangedPush(_ userInfo: [AnyHashable: Any], registration: PushSealRegistration) async -> Bool? {
        guard userInfo[keysChangedPushKey] != nil else { return nil }
        do {
            try await refreshKeys(registration: registration, now: PushSealDeviceKeys.unixNow(), reRegister: true)
            return true
        } catch {
            log.error("stage=keysChanged event=failed error=\(String(describing: error), privacy: .public)")
            return false
        }
    }

    /// Pins the published sender keys (new ones, and new statuses of known ones), applies the
    /// revocation list, unpins sender keys past their `notAfter`; with `reRegister`, uploads the
    /// registration again when the usable pins changed (so the server counts this device ready).
    public static func refreshKeys(registration: PushSealRegistration, now: Int64, reRegister: Bool) async throws {
        let appID = registration.configuration.appID
        let before = try PushSealDeviceKeys.usableSenderKeyIDs(appID: appID, now: now)
        _ = try await registration.refreshSenderKeys()
        _ = try await registration.refreshRevocations()
        _ = try PushSealDeviceKeys.prune(appID: appID, now: now)
        UserDefaults.standard.set(Int(now), forKey: lastRefreshDefaultsKey)
        let after = try PushSealDeviceKeys.usableSenderKeyIDs(appID: appID, now: now)
        if reRegister, after != before, let token = UserDefaults.standard.data(forKey: deviceTokenDefaultsKey) {
            try await registerCurrentKey(registration: registration, deviceToken: token)
        }
    }

    /// Registers the newest key (pending if a rotation is under way, else primary); makes one
    /// when the app has none. Promotes it only once the server accepted it (G13: the old key
    /// keeps opening until then).
    public static func registerCurrentKey(registration: PushSealRegistration, deviceToken: Data) async throws {
        let appID = registration.configuration.appID
        let keys = try PushSealDeviceKeys.list(appID: appID).filter { $0.kind == PushSealKeyKind.v2DeviceKey.label }
        let current = keys.first { $0.status == PushSealKeyStatus.pending.name }
            ?? keys.first { $0.status == PushSealKeyStatus.primary.name }
        let record = try current.map { try PushSealDeviceKeys.registrationRecord(keyID: $0.keyId, appID: appID) }
            ?? PushSealDeviceKeys.makeDeviceKey(appID: appID)
        try await registration.register(record, deviceToken: deviceToken)
        try PushSealDeviceKeys.promote(keyID: record.keyId, appID: appID)
    }

    /// One rotation: new pair → register → promote → prune; then the sender keys and
    /// revocations are refreshed.
    public static func rotate(registration: PushSealRegistration) async throws {
        let appID = registration.configuration.appID
        guard let token = UserDefaults.standard.data(forKey: deviceTokenDefaultsKey) else { return }  // not registered yet
        let hasPending = try PushSealDeviceKeys.list(appID: appID)
            .contains { $0.kind == PushSealKeyKind.v2DeviceKey.label && $0.status == PushSealKeyStatus.pending.name }
        if !hasPending { _ = try PushSealDeviceKeys.rotate(appID: appID) }
        try await refreshKeys(registration: registration, now: PushSealDeviceKeys.unixNow(), reRegister: false)
        try await registerCurrentKey(registration: registration, deviceToken: token)
        _ = try PushSealDeviceKeys.prune(appID: appID)
    }

    /// Call once from `application(_:didFinishLaunchingWithOptions:)`, before it returns (as
    /// BGTaskScheduler requires), then `scheduleRotation()`.
    /// - Throws: `Problem` `taskIdentifierNotPermitted` when Info.plist's
    ///   `BGTaskSchedulerPermittedIdentifiers` lacks ``rotationTaskIdentifier`` or iOS refuses
    ///   it: without the task no key rotation and no sender key refresh ever run in the
    ///   background, so do not ignore it (assert in debug builds, report it in release).
    public static func registerBackgroundRotation(registration: PushSealRegistration) throws {
        let identifier = rotationTaskIdentifier
        let permitted = Bundle.main.object(forInfoDictionaryKey: "BGTaskSchedulerPermittedIdentifiers") as? [String] ?? []
        guard permitted.contains(identifier) else {
            log.error("stage=rotate event=notPermitted identifier=\(identifier, privacy: .public)")
            throw Problem(code: "taskIdentifierNotPermitted", identifier: identifier)
        }
        let registered = BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: nil) { task in
            let completion = TaskCompletion(task)
            let work = Task {
                do {
                    try await rotate(registration: registration)
                    completion.finish(success: true)
                } catch {
                    log.error("stage=rotate event=failed error=\(String(describing: error), privacy: .public)")
                    completion.finish(success: false)
                }
            }
            task.expirationHandler = {
                work.cancel()
                completion.finish(success: false)
            }
            scheduleRotation()  // the next one, 30 days on
        }
        guard registered else { throw Problem(code: "taskIdentifierNotPermitted", identifier: identifier) }
    }

    /// Asks iOS to run the rotation task no earlier than 30 days from now (iOS picks the moment).
    public static func scheduleRotation() {
        let request = BGAppRefreshTaskRequest(identifier: rotationTaskIdentifier)
        request.earliestBeginDate = Date(timeIntervalSinceNow: rotationPeriodSeconds)
        do {
            try BGTaskScheduler.shared.submit(request)
        } catch {
            log.error("stage=rotate event=scheduleFailed error=\(String(describing: error), privacy: .public)")
        }
    }
}

/// Calls `setTaskCompleted(success:)` exactly once, from the work or from the expiration handler.
///
/// `@unchecked Sendable`: `BGTask` is not marked Sendable; it is only touched under `lock`, once.
final class TaskCompletion: @unchecked Sendable {
    private let lock = NSLock()
    private var task: BGTask?

    init(_ task: BGTask) { self.task = task }

    func finish(success: Bool) {
        let pending: BGTask? = lock.withLock {
            defer { task = nil }
            return task
        }
        pending?.setTaskCompleted(success: success)
    }
}
