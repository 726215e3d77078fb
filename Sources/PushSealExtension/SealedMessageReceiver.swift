import PushSealJSON
import PushSealCrypto
import PushSealWire

/// The stages every receiver of a sealed message runs, in order, each logged as one line
/// (`stage=… event=…`): `keyLookup` (envelope and key by key id, the pinned sender keys in auth
/// mode), `open` (authenticate and decrypt with the configured app id), `check` (the message's
/// kind, a retired key, `exp`, then the replay guard). Shared by the Notification Service
/// Extension (``DecryptingServiceExtension``, display messages) and the app's background handler
/// (``RetractHandler``, retracts), so both open with the same key items and the same rules.
struct SealedMessageReceiver {
    /// What receiving gave.
    enum Outcome {
        /// Authentic, current, of the expected kind, and (with a guard) recorded as seen.
        case opened(PushNotification)
        /// Refused: a stable reason token (``FallbackReason``) and a human detail.
        case refused(reason: String, detail: String)
    }

    let configuration: DecryptingServiceConfiguration
    let logger: any DiagnosticLogger

    /// Receives `payload`, accepting only a message of `kind`. The kind is checked before the
    /// replay guard, so a message sent down the wrong path does not use up its id.
    func receive(_ payload: JSONValue, expecting kind: MessageKind) -> Outcome {
        var start = ContinuousClock.now
        let envelope: SealedPayload
        let key: SecretBytes
        let retiredAt: Int64?
        do {
            envelope = try configuration.opener.envelope(in: payload)
        } catch {
            let reason = FallbackReason.envelope(error)
            log("keyLookup", "failed", since: start, [("reason", reason)])
            return .refused(reason: reason, detail: DecryptingServiceExtension.envelopeDetail(error))
        }
        let keyID = envelope.keyID
        do {
            (key, retiredAt) = try configuration.keyProvider.keyAndRetirement(for: envelope)
            log("keyLookup", "ok", since: start, [("keyID", keyID)])
        } catch {
            let reason = FallbackReason.key(error)
            log("keyLookup", "failed", since: start, [("keyID", keyID), ("reason", reason)])
            return .refused(reason: reason, detail: "no usable key for key id \(keyID): \(Self.describe(error))")
        }

        start = ContinuousClock.now
        let plaintext: PushNotification
        do {
            plaintext = try configuration.opener.open(envelope, with: key, appID: configuration.appID)
            log("open", "ok", since: start, [("keyID", keyID), ("encryptedByteCount", String(payload[WireFormat.encryptedDataField]?.stringValue?.utf8.count ?? 0))])
        } catch {
            let reason = FallbackReason.open(error)
            log("open", "failed", since: start, [("keyID", keyID), ("reason", reason)])
            return .refused(reason: reason, detail: "the payload did not open: \(Self.describe(error))")
        }

        start = ContinuousClock.now
        guard plaintext.kind == kind else {
            log("check", "wrongKind", since: start, [("kind", plaintext.kind.rawValue)])
            return .refused(reason: FallbackReason.wrongKind(plaintext.kind),
                            detail: kind == .display
                                ? "a \(plaintext.kind.rawValue) message is for the app's background handler, not for display (FORMAT.md §5.1)"
                                : "a \(plaintext.kind.rawValue) message is for the Notification Service Extension; the background handler acts only on a \(kind.rawValue)")
        }
        if let retiredAt, (plaintext.iat ?? Int64.max) > retiredAt {
            // A retired key still opens what was sealed before its retirement, never later (F4).
            log("check", "keyRetired", since: start, [("keyID", keyID), ("retiredAt", String(retiredAt))])
            return .refused(reason: FallbackReason.keyRetired, detail: "key \(keyID) was retired at \(retiredAt); the message's iat is later or absent")
        }
        if let exp = plaintext.exp {
            let now = configuration.now()
            if now >= exp {
                log("check", "expired", since: start, [("exp", String(exp)), ("now", String(now))])
                return .refused(reason: FallbackReason.expired, detail: "exp \(exp) is not after now \(now) (seconds since 1970, UTC)")
            }
        }
        if configuration.replayCapacity > 0, configuration.containerDirectory == nil, plaintext.id != nil {
            // No App Group: the real extension has nowhere to keep its replay cache and shows the
            // fallback for every notification with an id (Examples/iOS; docs/fallback.md).
            log("check", "replayGuardUnavailable", since: start, [("reason", "no App Group container")])
            return .refused(reason: FallbackReason.replayGuardUnavailable,
                            detail: "the extension has no App Group container to keep its replay cache in, so a notification with an id cannot be checked (add an App Group to the extension's entitlements)")
        }
        if configuration.replayCapacity > 0, let container = configuration.containerDirectory {
            let verdict: ReplayGuard.Verdict
            do {
                verdict = try ReplayGuard(containerDirectory: container, capacity: configuration.replayCapacity)
                    .check(id: plaintext.id, iat: plaintext.iat, exp: plaintext.exp, now: configuration.now())
            } catch {
                // Fail closed (security review F2): a guard that cannot vouch shows nothing as authentic.
                log("check", "replayGuardUnavailable", since: start, [("reason", Self.describe(error))])
                return .refused(reason: FallbackReason.replayGuardUnavailable, detail: "the replay guard's store cannot be used: \(Self.describe(error))")
            }
            switch verdict {
            case .replayed:
                log("check", "replayed", since: start)
                return .refused(reason: FallbackReason.replayed, detail: "this notification id was already \(kind == .display ? "shown" : "received") on this device")
            case .tooOld:
                log("check", "replayTooOld", since: start)
                return .refused(reason: FallbackReason.replayTooOld,
                                detail: "the notification is older than the replay guard can vouch for (exp, or iat + \(ReplayGuard.maxAgeSeconds) s, passed)")
            case .fresh, .unchecked:
                break
            }
        }
        log("check", "ok", since: start, [("hasExp", String(plaintext.exp != nil)), ("hasID", String(plaintext.id != nil))])
        return .opened(plaintext)
    }

    private func log(_ stage: String, _ event: String, since start: ContinuousClock.Instant, _ fields: [(key: String, value: String)] = []) {
        logger.log(DiagnosticEntry(stage: stage, event: event, fields: [("durationMs", formatMilliseconds(millisecondsSince(start)))] + fields))
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? ExtensionError { return e.reason }
        return String(describing: error)
    }
}
