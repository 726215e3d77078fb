import Foundation
import PushSealRegistry
import Testing

/// Security review G12: a connection string's password never reaches an error (libpq quotes the
/// part it cannot parse: PushSeal redacts every quoted part), and `--registry`'s help says to
/// keep passwords out of argv. Fails on 0031154, which passed libpq's message through.
@Suite struct RegistryConnectionStringTests {
    static let secrets = ["Tr0ub4dor%3&horse", "50%off-Summer", "hunter2secret"]

    @Test(arguments: [
        "postgresql://pushseal:Tr0ub4dor%3&horse@db.internal/pushseal",
        "postgresql://pushseal:50%off-Summer@db.internal/pushseal",
        "host=/tmp dbname=pushseal hunter2secret",
        "host=/tmp dbname=pushseal password hunter2secret",
    ])
    func aMalformedConnectionStringsPasswordIsNeverQuoted(_ cs: String) throws {
        do {
            _ = try PostgresKeyStore(connectionString: cs, kek: nil)
            Issue.record("opened \(cs)")
        } catch let e as RegistryError {
            #expect(e.code == .invalidConnectionString, "\(e)")
            for s in Self.secrets { #expect(!e.reason.contains(s) && !e.reason.contains("Tr0ub4dor") && !e.reason.contains("hunter2"), "\(e.reason)") }
        }
    }

    @Test func theToolsSayNotToPutAPasswordInArgv() throws {
        let keys = RegistryCLITests.tool("push-keys")
        let r = try RegistryCLITests.run([keys, "list", "--registry", "postgresql://pushseal:Tr0ub4dor%3&horse@db.internal/pushseal", "--json"])
        #expect(r.status == 64 && !r.stdout.contains("Tr0ub4dor") && !r.stderr.contains("Tr0ub4dor"), "\(r)")
        for argv in [[keys, "list", "--help"], [keys, "registry", "migrate", "--help"], [RegistryCLITests.tool("push-seal"), "batch", "--help"]] {
            let help = try RegistryCLITests.run(argv).stdout
            #expect(help.contains("PGPASSFILE") && help.contains("ARGV"), "\(argv[1...])")
        }
    }
}
