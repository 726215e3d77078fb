import Foundation
import Testing

/// `push-keys keychain init`'s device secret options (review F1) through the typed options:
/// beside the directory by default, inside or any file when asked, never both; a keychain whose
/// secret is gone is exit 66 (`deviceSecretMissing`).
@Suite struct DeviceSecretCLITests {
    @Test func initPutsTheSecretWhereTheOptionsSay() throws {
        let dir = try KeysCLI.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fm = FileManager.default
        let beside = dir.appendingPathComponent("srv").path
        let b = try KeysCLI.keys(["keychain", "init", "--keychain", beside, "--json"])
        #expect(b.status == 0, "\(b.stderr)")
        #expect(b.stdout.contains("\"deviceSecret\":\"\(beside).secret\""))
        #expect(fm.fileExists(atPath: beside + ".secret") && !fm.fileExists(atPath: beside + "/device-secret"))

        let inside = dir.appendingPathComponent("phone").path
        #expect(try KeysCLI.keys(["keychain", "init", "--keychain", inside, "--device-secret-inside"]).status == 0)
        #expect(fm.fileExists(atPath: inside + "/device-secret") && !fm.fileExists(atPath: inside + ".secret"))

        let file = dir.appendingPathComponent("kc.secret").path, other = dir.appendingPathComponent("other").path
        #expect(try KeysCLI.keys(["keychain", "init", "--keychain", other, "--device-secret", file]).status == 0)
        #expect(fm.fileExists(atPath: file))
        let mode = try fm.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let both = try KeysCLI.keys(["keychain", "init", "--keychain", dir.appendingPathComponent("x").path,
                                     "--device-secret", file + "2", "--device-secret-inside"])
        #expect(both.status == 64)
        #expect(both.stderr.contains("not both"))
        #expect(!fm.fileExists(atPath: dir.appendingPathComponent("x").path))

        // The keychain without its secret: 66, and the hint says how to give its place.
        try fm.moveItem(atPath: beside + ".secret", toPath: dir.appendingPathComponent("moved.secret").path)
        let missing = try KeysCLI.keys(["keychain", "list", "--keychain", beside])
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.contains("PUSHSEAL_DEVICE_SECRET_FILE"))
        let found = try KeysCLI.keys(["keychain", "list", "--keychain", beside],
                                     env: ["PUSHSEAL_DEVICE_SECRET_FILE": dir.appendingPathComponent("moved.secret").path])
        #expect(found.status == 0, "\(found.stderr)")
        // A relative path in the variable is refused, with a hint to make it absolute.
        let relative = try KeysCLI.keys(["keychain", "list", "--keychain", beside], env: ["PUSHSEAL_DEVICE_SECRET_FILE": "moved.secret"])
        #expect(relative.status != 0 && relative.stderr.hasPrefix("push-keys: error: the device secret path moved.secret is not absolute"), "\(relative.stderr)")
        #expect(relative.stderr.contains("\nhint: give an absolute path, e.g. PUSHSEAL_DEVICE_SECRET_FILE=\"$PWD/moved.secret\""), "\(relative.stderr)")
    }
}
