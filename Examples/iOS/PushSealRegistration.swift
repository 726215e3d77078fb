// PushSeal registration on a real iPhone (app target only; iOS 17+): the app uploads its
// version 2 registration record (FORMAT.md §V.6) together with its APNs device token to THE
// APP'S OWN authenticated API, and rotates its key in the background every 30 days.
//
// The server side is PushSeal's gateway (`push-gateway serve`, docs/gateway.md): point
// apiBaseURL at its `/v1/` routes, directly or through your backend (which adds the recipient and
// its API key: POST /v1/devices?recipient=ID), or at your own backend that imports the record
// with PushSeal's server library (Examples/server). The bearer token comes from your app's own
// login. The record holds no secret; the private key never leaves the keychain
// (PushSealDeviceKeys.swift).
// It cannot be compiled on Linux; `swiftc -parse` checks its syntax.
import BackgroundTasks
import Foundation
import os

/// Talks to the app's own API: registration upload, sender key and revocation download.
struct PushSealRegistration: Sendable {
    struct Configuration: Sendable {
        /// The app's bundle id, which is also the APNs topic and the app id of the records.
        var appID: String
        /// The gateway's API, e.g. `https://push.example.com/v1/` (push-gateway, docs/gateway.md),
        /// or your backend in front of it. POST `devices` takes a registration; GET `sender-keys`
        /// and `revocations` return arrays of records (see README.md "Registration end to end").
        var apiBaseURL: URL
        /// A bearer token from the app's own login (OAuth, session token, …), fetched fresh for
        /// each request. Never a PushSeal key.
        var bearerToken: @Sendable () async throws -> String
    }

    /// Why a request failed: `notSignedIn`, `http` (status code), `malformedResponse`.
    struct Failure: Error, CustomStringConvertible {
        let code: String
        let httpStatus: Int?
        var description: String { httpStatus.map { "\(code) (HTTP \($0))" } ?? code }
    }

    let configuration: Configuration

    /// The JSON body of POST `devices`: the record exactly as FORMAT.md §V.6 gives it, the APNs
    /// device token in hex (as APNs' HTTP/2 API takes it in the path), and the environment the
    /// token belongs to.
    struct Upload: Encodable {
        var registration: PushSealDeviceKeys.RegistrationRecord
        var apnsDeviceToken: String
        /// `development` (Xcode builds) or `production` (TestFlight, App Store).
        var apnsEnvironment: String
    }

    /// Uploads `record` with `deviceToken`; returns when the server answered 2xx (it has imported
    /// the public key and maps it to this installation, so it may seal to it from now on).
    /// - Throws: `Failure`, `URLError`, or what `bearerToken` throws.
    func register(_ record: PushSealDeviceKeys.RegistrationRecord, deviceToken: Data) async throws {
        #if DEBUG
        let environment = "development"
        #else
        let environment = "production"
        #endif
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = try encoder.encode(Upload(registration: record, apnsDeviceToken: PushSealWire.hexString(deviceToken),
                                             apnsEnvironment: environment))
        _ = try await send("devices", method: "POST", body: body)
    }

    /// Downloads the app's sender key records and pins each (PushSealDeviceKeys.pinSender): a
    /// new sender key is pinned next to the old one before the server switches to it.
    /// - Returns: the sender key ids pinned.
    func refreshSenderKeys() async throws -> [String] {
        try await records("sender-keys").map { try PushSealDeviceKeys.pinSender(recordJSON: $0, appID: configuration.appID) }
    }

    /// Downloads revocation records and applies them (key id → disabled).
    /// - Returns: the key ids disabled on this device.
    func refreshRevocations() async throws -> [String] {
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

/// Key lifecycle of the app: first registration, registration again when the APNs device token
/// changes, and rotation every 30 days with `BGAppRefreshTask`.
///
/// Order of a rotation (never a moment without a key the server can seal to and the device can
/// open): make the new pair (pending) → register it → promote it (the older key becomes
/// decryptOnly for 30 days, retired now) → prune keys past their grace. If the upload fails,
/// the old key stays primary and the pending one is registered again next time.
enum PushSealKeyLifecycle {
    /// `BGTaskSchedulerPermittedIdentifiers` entry of the app's Info.plist (README.md).
    static let rotationTaskIdentifier = "com.example.app.pushseal.rotate"
    /// 30 days, in seconds.
    static let rotationPeriodSeconds: TimeInterval = 30 * 24 * 60 * 60
    /// Where the app keeps its APNs device token between launches (not a secret).
    static let deviceTokenDefaultsKey = "PushSealAPNsDeviceToken"
    private static let log = Logger(subsystem: "pushseal", category: "registration")

    /// Call from `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`: remembers the
    /// token and registers the current key with it (a first launch makes the key).
    static func deviceTokenDidChange(_ token: Data, registration: PushSealRegistration) async {
        UserDefaults.standard.set(token, forKey: deviceTokenDefaultsKey)
        do {
            try await registerCurrentKey(registration: registration, deviceToken: token)
        } catch {
            log.error("stage=register event=failed error=\(String(describing: error), privacy: .public)")
        }
    }

    /// Registers the newest key (pending if a rotation is under way, else primary); makes one
    /// when the app has none. Promotes it once the server accepted it.
    static func registerCurrentKey(registration: PushSealRegistration, deviceToken: Data) async throws {
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
    static func rotate(registration: PushSealRegistration) async throws {
        let appID = registration.configuration.appID
        guard let token = UserDefaults.standard.data(forKey: deviceTokenDefaultsKey) else { return }  // not registered yet
        let hasPending = try PushSealDeviceKeys.list(appID: appID)
            .contains { $0.kind == PushSealKeyKind.v2DeviceKey.label && $0.status == PushSealKeyStatus.pending.name }
        if !hasPending { _ = try PushSealDeviceKeys.rotate(appID: appID) }
        try await registerCurrentKey(registration: registration, deviceToken: token)
        _ = try PushSealDeviceKeys.prune(appID: appID)
        _ = try await registration.refreshSenderKeys()
        _ = try await registration.refreshRevocations()
    }

    /// Call once from `application(_:didFinishLaunchingWithOptions:)`, before it returns (as
    /// BGTaskScheduler requires), then `scheduleRotation()`.
    static func registerBackgroundRotation(registration: PushSealRegistration) {
        let registered = BGTaskScheduler.shared.register(forTaskWithIdentifier: rotationTaskIdentifier, using: nil) { task in
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
        if !registered { log.error("stage=rotate event=notPermitted identifier=\(rotationTaskIdentifier, privacy: .public)") }
    }

    /// Asks iOS to run the rotation task no earlier than 30 days from now (iOS picks the moment).
    static func scheduleRotation() {
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
