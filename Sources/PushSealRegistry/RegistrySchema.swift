/// The registry's tables and their migrations (docs/registry.md "Schema").
///
/// Migrations are applied in order by ``migrate(_:)`` in one transaction holding a transaction
/// advisory lock (``advisoryLockKey``), so two processes migrating at once apply each step once;
/// each applied version is a row of `pushseal_schema_version`. A store opens only a database at
/// exactly ``currentVersion``: older is `.schemaTooOld` ("run push-keys registry migrate"), newer
/// `.schemaTooNew` (refused: this build does not know its tables).
public enum RegistrySchema {
    /// The schema version this build reads and writes.
    public static let currentVersion = 12
    /// `pg_advisory_xact_lock` key serializing migrations: "PSMG" as a big-endian integer.
    public static let advisoryLockKey: Int64 = 0x5053_4D47

    /// Migration `n` is `migrations[n - 1]`: a description and its statements.
    static let migrations: [(String, [String])] = [
        ("v1 keysets, keys (wrapped), KEK check, audit", [
            """
            CREATE TABLE pushseal_kek (
              id smallint PRIMARY KEY CHECK (id = 1),
              check_box bytea NOT NULL,
              created_at bigint NOT NULL)
            """,
            """
            CREATE TABLE pushseal_keysets (
              app_id text NOT NULL,
              recipient text NOT NULL,
              version bigint NOT NULL DEFAULT 1,
              changed_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
              rotation_key_id text,
              rotation_grace_seconds bigint,
              rotation_promoted boolean,
              PRIMARY KEY (app_id, recipient),
              CHECK ((rotation_key_id IS NULL) = (rotation_grace_seconds IS NULL)
                     AND (rotation_key_id IS NULL) = (rotation_promoted IS NULL)))
            """,
            "CREATE INDEX pushseal_keysets_changed ON pushseal_keysets (changed_xid)",
            """
            CREATE TABLE pushseal_keys (
              app_id text NOT NULL,
              recipient text NOT NULL,
              key_id text NOT NULL,
              position integer NOT NULL,
              status text NOT NULL CHECK (status IN ('pending', 'primary', 'decryptOnly', 'disabled', 'destroyed')),
              created_at bigint NOT NULL,
              promoted_at bigint,
              retired_at bigint,
              not_after bigint,
              seal_count bigint NOT NULL DEFAULT 0 CHECK (seal_count BETWEEN 0 AND 4294967296),
              seal_reserved_from bigint,
              wrapped_key bytea CHECK (wrapped_key IS NULL OR length(wrapped_key) = 60),
              PRIMARY KEY (app_id, recipient, key_id),
              FOREIGN KEY (app_id, recipient) REFERENCES pushseal_keysets ON DELETE CASCADE)
            """,
            "CREATE UNIQUE INDEX pushseal_keys_one_primary ON pushseal_keys (app_id, recipient) WHERE status = 'primary'",
            """
            CREATE TABLE pushseal_audit (
              id bigserial PRIMARY KEY,
              time bigint NOT NULL,
              event text NOT NULL,
              app_id text NOT NULL,
              recipient text NOT NULL,
              key_id text,
              line text NOT NULL)
            """,
        ]),
        ("v2 registrations and sender keys, device tokens (tables only; issues 13 and 14)", [
            """
            CREATE TABLE pushseal_registrations (
              app_id text NOT NULL,
              recipient text NOT NULL,
              key_id text NOT NULL,
              kem_id integer NOT NULL,
              public_key bytea NOT NULL,
              created_at bigint NOT NULL,
              superseded_at bigint,
              PRIMARY KEY (app_id, recipient, key_id))
            """,
            """
            CREATE TABLE pushseal_sender_keys (
              app_id text NOT NULL,
              key_id text NOT NULL,
              status text NOT NULL,
              created_at bigint NOT NULL,
              wrapped_private_key bytea NOT NULL,
              PRIMARY KEY (app_id, key_id))
            """,
            """
            CREATE TABLE pushseal_device_tokens (
              app_id text NOT NULL,
              recipient text NOT NULL,
              token text NOT NULL,
              environment text NOT NULL CHECK (environment IN ('development', 'production')),
              registered_at bigint NOT NULL,
              invalidated_at bigint,
              PRIMARY KEY (app_id, recipient, token))
            """,
        ]),
        ("v2 registration history and sender key rotation (issue 13)", [
            """
            ALTER TABLE pushseal_registrations
              ADD COLUMN position integer NOT NULL DEFAULT 0,
              ADD COLUMN status text NOT NULL DEFAULT 'primary' CHECK (status IN ('primary', 'decryptOnly', 'disabled')),
              ADD COLUMN registered_at bigint NOT NULL DEFAULT 0,
              ADD CONSTRAINT pushseal_registrations_key CHECK (length(public_key) = 32)
            """,
            "CREATE UNIQUE INDEX pushseal_registrations_one_primary ON pushseal_registrations (app_id, recipient) WHERE status = 'primary'",
            """
            ALTER TABLE pushseal_sender_keys
              ADD COLUMN position integer NOT NULL DEFAULT 0,
              ADD COLUMN public_key bytea NOT NULL CHECK (length(public_key) = 32),
              ADD COLUMN retired_at bigint,
              ADD COLUMN not_after bigint,
              ALTER COLUMN wrapped_private_key DROP NOT NULL,
              ADD CONSTRAINT pushseal_sender_keys_status CHECK (status IN ('primary', 'decryptOnly', 'destroyed')),
              ADD CONSTRAINT pushseal_sender_keys_wrapped CHECK (wrapped_private_key IS NULL OR length(wrapped_private_key) = 60)
            """,
            """
            CREATE TABLE pushseal_v2_lists (
              app_id text NOT NULL,
              owner text NOT NULL,
              version bigint NOT NULL DEFAULT 1,
              PRIMARY KEY (app_id, owner))
            """,
        ]),
        ("device tokens in use: one per (app id, recipient, environment), one recipient per (app id, token), registered_at in ms (issue 15)", [
            "ALTER TABLE pushseal_device_tokens DROP COLUMN invalidated_at",
            """
            ALTER TABLE pushseal_device_tokens
              ADD CONSTRAINT pushseal_device_tokens_token CHECK (token ~ '^([0-9a-f]{2}){1,128}$'),
              ADD CONSTRAINT pushseal_device_tokens_time CHECK (registered_at >= 0)
            """,
            "CREATE UNIQUE INDEX pushseal_device_tokens_one_owner ON pushseal_device_tokens (app_id, token)",
            "CREATE UNIQUE INDEX pushseal_device_tokens_one_per_environment ON pushseal_device_tokens (app_id, recipient, environment)",
        ]),
        ("row authentication under the KEK: row_mac on registrations, sender keys, device tokens and lists; lists name their primary and count (security review G1)", [
            "ALTER TABLE pushseal_registrations ADD COLUMN row_mac bytea CHECK (row_mac IS NULL OR length(row_mac) = 32)",
            "ALTER TABLE pushseal_sender_keys ADD COLUMN row_mac bytea CHECK (row_mac IS NULL OR length(row_mac) = 32)",
            "ALTER TABLE pushseal_device_tokens ADD COLUMN row_mac bytea CHECK (row_mac IS NULL OR length(row_mac) = 32)",
            """
            ALTER TABLE pushseal_v2_lists
              ADD COLUMN primary_key_id text,
              ADD COLUMN entry_count integer,
              ADD COLUMN row_mac bytea CHECK (row_mac IS NULL OR length(row_mac) = 32)
            """,
            // Rows written before this version wait for `push-keys registry migrate --kek-file F`
            // (the one step that tags untagged rows); a registry without any is done at once.
            "CREATE TABLE pushseal_row_auth_pending (id smallint PRIMARY KEY CHECK (id = 1), row_count bigint NOT NULL)",
            """
            INSERT INTO pushseal_row_auth_pending (id, row_count)
            SELECT 1, n FROM (SELECT (SELECT count(*) FROM pushseal_registrations) + (SELECT count(*) FROM pushseal_sender_keys)
                                   + (SELECT count(*) FROM pushseal_device_tokens) + (SELECT count(*) FROM pushseal_v2_lists) AS n) t
            WHERE n > 0
            """,
        ]),
        ("the gateway's outbox, idempotency keys and shared provider tokens (issue 23)", [
            """
            CREATE TABLE pushseal_outbox (
              id uuid PRIMARY KEY,
              app_id text NOT NULL,
              recipient text NOT NULL,
              environment text NOT NULL CHECK (environment IN ('production', 'development')),
              device_token text NOT NULL,
              payload bytea NOT NULL CHECK (length(payload) BETWEEN 1 AND 5120),
              push_type text NOT NULL,
              topic text NOT NULL,
              priority integer,
              expiration bigint,
              collapse_id text,
              apns_id uuid NOT NULL,
              expires_at bigint,
              status text NOT NULL CHECK (status IN ('queued', 'sending', 'accepted', 'unregistered', 'rejected', 'failed', 'expired')),
              attempts integer NOT NULL DEFAULT 0,
              sends integer NOT NULL DEFAULT 0,
              http_status integer,
              reason text,
              apns_unique_id text,
              lease_owner text,
              lease_until bigint,
              created_at bigint NOT NULL,
              updated_at bigint NOT NULL,
              finished_at bigint,
              row_mac bytea NOT NULL CHECK (length(row_mac) = 32),
              CHECK ((status = 'sending') = (lease_owner IS NOT NULL AND lease_until IS NOT NULL)))
            """,
            "CREATE INDEX pushseal_outbox_queued ON pushseal_outbox (created_at) WHERE status = 'queued'",
            "CREATE INDEX pushseal_outbox_leases ON pushseal_outbox (lease_until) WHERE status = 'sending'",
            "CREATE INDEX pushseal_outbox_recipient ON pushseal_outbox (app_id, recipient) WHERE status = 'queued'",
            """
            CREATE TABLE pushseal_idempotency (
              scope text NOT NULL,
              key text NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 255),
              request_hash bytea NOT NULL,
              response bytea NOT NULL,
              created_at bigint NOT NULL,
              PRIMARY KEY (scope, key))
            """,
            "CREATE INDEX pushseal_idempotency_age ON pushseal_idempotency (created_at)",
            """
            CREATE TABLE pushseal_provider_tokens (
              team_id text NOT NULL,
              key_id text NOT NULL,
              jwt text,
              issued_at bigint,
              generation bigint NOT NULL DEFAULT 0,
              minted_at bigint,
              mint_count bigint NOT NULL DEFAULT 0,
              PRIMARY KEY (team_id, key_id))
            """,
        ]),
        ("push-gateway API keys: SHA-256 of the key, scopes, revocation (issue 23)", [
            """
            CREATE TABLE pushseal_gateway_api_keys (
              id text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{16}$'),
              name text NOT NULL CHECK (length(name) BETWEEN 1 AND 128),
              key_sha256 bytea NOT NULL UNIQUE CHECK (length(key_sha256) = 32),
              scopes text NOT NULL CHECK (scopes ~ '^(send|register|admin)(,(send|register|admin))*$'),
              created_at bigint NOT NULL,
              revoked_at bigint)
            """,
        ]),
        ("staged sender key rotation: a sender key may be pending (published, not sealing) or disabled (revoked) (issue 24)", [
            "ALTER TABLE pushseal_sender_keys DROP CONSTRAINT pushseal_sender_keys_status",
            "ALTER TABLE pushseal_sender_keys ADD CONSTRAINT pushseal_sender_keys_status CHECK (status IN ('pending', 'primary', 'decryptOnly', 'disabled', 'destroyed'))",
        ]),
        ("retracting through the gateway: an outbox row's kind, the caller's own notification id sealed under the KEK, status cancelled (issue 29)", [
            // kind: a retract is never retracted itself. device_id_sealed: the notification id the
            // device sees when the caller chose it (AES-256-GCM under a KEK-derived key, AAD naming
            // the row); NULL when it is the row's own id (the gateway's default).
            """
            ALTER TABLE pushseal_outbox
              ADD COLUMN kind text NOT NULL DEFAULT 'display' CHECK (kind IN ('display', 'retract')),
              ADD COLUMN device_id_sealed bytea CHECK (device_id_sealed IS NULL OR length(device_id_sealed) BETWEEN 29 AND 284)
            """,
            "ALTER TABLE pushseal_outbox DROP CONSTRAINT pushseal_outbox_status_check",
            "ALTER TABLE pushseal_outbox ADD CONSTRAINT pushseal_outbox_status CHECK (status IN ('queued', 'sending', 'accepted', 'unregistered', 'rejected', 'failed', 'expired', 'cancelled'))",
        ]),
        // Issue 24, the pins a device reports with its registration (migration 10: two columns
        // of pushseal_registrations, in the row MAC when set).
        ("registrations record the sender key ids their device reported pinned (staged sender rotation, issue 24)", [
            """
            ALTER TABLE pushseal_registrations
              ADD COLUMN pinned_sender_key_ids text CHECK (pinned_sender_key_ids ~ '^([A-Za-z0-9_-]{1,64}(,[A-Za-z0-9_-]{1,64})*)?$'),
              ADD COLUMN pins_reported_at bigint,
              ADD CONSTRAINT pushseal_registrations_pins CHECK ((pinned_sender_key_ids IS NULL) = (pins_reported_at IS NULL))
            """,
        ]),
        // Issue 23, retention (migration 11): push-gateway deletes finished outbox rows once they
        // are older than --keep-finished; this index finds them without reading the table. Only
        // a row's final version enters it (finished_at is set once, with the final status).
        ("finished outbox rows found by their finish time, for push-gateway's retention (issue 23)", [
            "CREATE INDEX pushseal_outbox_finished ON pushseal_outbox (finished_at) WHERE finished_at IS NOT NULL",
        ]),
        // Review of 2026-12-04 (S1): an API key row written without the KEK (a new key, widened
        // scopes, a revocation undone) would let the database role register devices and send
        // through the gateway. The keys of before are tagged by the `migrate --kek-file F` that
        // applies this version, in that run only (PostgresKeyStore.migrate): no marker row a
        // writer could put back to have later rows tagged.
        ("push-gateway API keys authenticated under the KEK (row_mac)", [
            "ALTER TABLE pushseal_gateway_api_keys ADD COLUMN row_mac bytea CHECK (row_mac IS NULL OR length(row_mac) = 32)",
        ]),
    ]

    /// Applies every missing migration. Idempotent; safe from several processes at once.
    /// - Returns: the versions applied by this call (empty when the schema was current).
    /// - Throws: `RegistryError` `.schemaTooNew` (nothing changed), `.query`, `.unavailable`.
    static func migrate(_ pool: ConnectionPool) throws -> [Int] {
        try pool.transaction { c in
            try c.exec("SELECT pg_advisory_xact_lock($1)", [.int(advisoryLockKey)])
            try c.exec("""
                CREATE TABLE IF NOT EXISTS pushseal_schema_version (
                  version integer PRIMARY KEY,
                  description text NOT NULL,
                  applied_at timestamptz NOT NULL DEFAULT now())
                """)
            let have = try c.exec("SELECT coalesce(max(version), 0) FROM pushseal_schema_version").int(0, 0) ?? 0
            guard have <= Int64(currentVersion) else { throw tooNew(Int(have)) }
            var applied: [Int] = []
            for n in stride(from: Int(have) + 1, through: currentVersion, by: 1) {
                let (description, statements) = migrations[n - 1]
                for s in statements { try c.exec(s) }
                try c.exec("INSERT INTO pushseal_schema_version (version, description) VALUES ($1, $2)", [.int(Int64(n)), .text(description)])
                applied.append(n)
            }
            return applied
        }
    }

    /// The database's schema version: 0 without the version table.
    static func version(_ c: PGConnection) throws -> Int {
        do {
            return Int(try c.exec("SELECT coalesce(max(version), 0) FROM pushseal_schema_version").int(0, 0) ?? 0)
        } catch let e as RegistryError where e.sqlState == "42P01" {
            return 0
        }
    }

    /// Refuses a database whose schema is not ``currentVersion``.
    /// - Throws: `RegistryError` `.schemaTooOld`, `.schemaTooNew`.
    static func check(_ c: PGConnection) throws {
        let v = try version(c)
        if v < currentVersion {
            throw RegistryError(.schemaTooOld, v == 0
                ? "the registry \(c.target) has no PushSeal schema: run push-keys registry migrate"
                : "the registry \(c.target) has schema version \(v), this build needs \(currentVersion): run push-keys registry migrate")
        }
        if v > currentVersion { throw tooNew(v) }
    }

    /// Rows written before schema 5 that `push-keys registry migrate --kek-file F` has not authenticated yet (0: none).
    static func pendingRowCount(_ c: PGConnection) throws -> Int {
        Int(try c.exec("SELECT coalesce(max(row_count), 0) FROM pushseal_row_auth_pending").int(0, 0) ?? 0)
    }

    /// Refuses a registry whose rows from before schema 5 are not authenticated yet.
    /// - Throws: `RegistryError` `.schemaTooOld` ("run push-keys registry migrate --kek-file F").
    static func checkRowsAuthenticated(_ c: PGConnection) throws {
        let n = try pendingRowCount(c)
        guard n == 0 else {
            throw RegistryError(.schemaTooOld,
                "the registry \(c.target) holds \(n) rows from before schema 5 that are not authenticated yet: run push-keys registry migrate --kek-file F (once, with the key-encryption key)")
        }
    }

    static func tooNew(_ v: Int) -> RegistryError {
        RegistryError(.schemaTooNew,
            "the registry has schema version \(v), newer than this build's \(currentVersion): refused (upgrade PushSeal; never downgrade a migrated registry)")
    }
}
