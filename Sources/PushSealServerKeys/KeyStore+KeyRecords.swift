import PushSealKeychain
public import PushSealKeyRecords

// Key records out of and into the file keychain (moved from KeyRecord.swift).
extension KeyStore {
    /// Exports a keyset (or one key of it) as a key record for the other side.
    /// - Parameters:
    ///   - keyID: one key, or `nil` for every key (disabled and destroyed ones as tombstones,
    ///     without bytes).
    /// - Throws: `KeysError` `.unknownKeyset`, `.unknownKey`, `.invalidName`; `KeychainError`.
    public func exportRecord(appID: String, recipient: String, keyID: String? = nil) throws -> KeyRecord {
        try transitions.exportRecord(appID: appID, recipient: recipient, keyID: keyID)
    }

    /// What ``importRecord(_:expectedAppID:graceSeconds:now:)`` did.
    public struct ImportResult: Sendable {
        /// The keyset after the import.
        public var keyset: KeysetInfo
        /// `true` when the keyset was created by this import.
        public var created: Bool
        /// Key ids added or whose status moved forward; empty when the record was already known.
        public var changedKeyIDs: [String]

        /// Creates an import result.
        public init(keyset: KeysetInfo, created: Bool, changedKeyIDs: [String]) {
            self.keyset = keyset
            self.created = created
            self.changedKeyIDs = changedKeyIDs
        }
    }

    /// Imports a key record into this keychain (creating the keyset if needed). Idempotent:
    /// importing the same record twice changes nothing the second time. All-or-nothing: any
    /// error leaves the keyset exactly as it was.
    /// - Parameters:
    ///   - record: the decoded record.
    ///   - expectedAppID: if given, the record must be for this app id. Independently, when the
    ///     keychain identity has an `application-identifier` (`TEAMID.bundle.id`), the record's app
    ///     id must be that bundle id (or its prefix, for an extension `bundle.id.Extension`).
    ///   - graceSeconds: grace of a local primary superseded by the record's newer primary, 0 or
    ///     more seconds; `now + graceSeconds` must not pass ``KeyTime/maxTimeSeconds``.
    ///   - now: Unix seconds, 0 to ``KeyTime/maxTimeSeconds``.
    /// - Throws: `KeysError` `.wrongAppID`, `.duplicateKeyID` (a key id already present with other
    ///   bytes), `.timeOutOfRange` (checked before anything is written); `KeychainError`.
    @discardableResult
    public func importRecord(_ record: KeyRecord, expectedAppID: String? = nil, graceSeconds: Int64 = KeyTime.defaultGraceSeconds,
                             now: Int64 = KeyTime.now()) throws -> ImportResult {
        try transitions.importRecord(record, expectedAppID: expectedAppID, applicationIdentifier: keychain.entitlements.applicationIdentifier,
                                     graceSeconds: graceSeconds, now: now)
    }
}

