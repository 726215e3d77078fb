// keychain-stress: a test helper for PushSealKeychainTests (multi-process and crash tests).
// Not a user tool. Usage:
//   keychain-stress add DIR app|ext COUNT PREFIX     add COUNT items (account PREFIX-i) to the shared group
//   keychain-stress update DIR COUNT TAG             update item (stress, shared) to "TAG-i", i = 0..<COUNT
//   keychain-stress write-loop DIR                   print "ready", then update/add/delete forever (to be killed)
// Exit 0 on success; on a keychain error prints it to stderr and exits 1.
import Foundation
import PushSealCrypto
import PushSealKeychain

let sharedGroup = "TEAM123456.com.example.shared"
func identity(_ name: String) -> Entitlements {
    Entitlements(applicationIdentifier: name == "ext" ? "TEAM123456.com.example.app.NotificationService" : "TEAM123456.com.example.app",
                 keychainAccessGroups: [sharedGroup], applicationGroups: ["group.com.example"])
}
func bytes(_ s: String) -> SecretBytes { SecretBytes(copying: Array(s.utf8)) }

let args = CommandLine.arguments
guard args.count >= 3 else {
    FileHandle.standardError.write(Data("keychain-stress: error: usage: keychain-stress add|update|write-loop DIR ...\n".utf8))
    exit(64)
}
let dir = URL(fileURLWithPath: args[2])
do {
    switch args[1] {
    case "add" where args.count == 6:
        let kc = try Keychain(opening: dir, as: identity(args[3]))
        for i in 0..<(Int(args[4]) ?? 0) {
            try kc.add(service: "stress", account: "\(args[5])-\(i)", accessGroup: sharedGroup, accessibility: .afterFirstUnlock,
                       data: bytes("\(args[5])-\(i)-secret"))
        }
    case "update" where args.count == 5:
        let kc = try Keychain(opening: dir, as: identity("app"))
        for i in 0..<(Int(args[3]) ?? 0) {
            try kc.update(ItemQuery(service: "stress", account: "shared", accessGroup: sharedGroup),
                          with: ItemChanges(label: .some("\(args[4])-\(i)"), data: bytes("\(args[4])-\(i)")))
        }
    case "write-loop" where args.count == 3:
        let kc = try Keychain(opening: dir, as: identity("app"))
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        var n = 0
        while true {
            n += 1
            try kc.update(ItemQuery(service: "stress", account: "victim"), with: ItemChanges(data: bytes("victim-\(getpid())-\(n)")))
            try kc.add(service: "stress", account: "extra-\(getpid())-\(n)", accessibility: .afterFirstUnlock, data: bytes("extra-\(n)"))
            try kc.delete(ItemQuery(service: "stress", account: "extra-\(getpid())-\(n)"))
        }
    default:
        FileHandle.standardError.write(Data("keychain-stress: error: bad arguments\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("keychain-stress: error: \(error)\n".utf8))
    exit(1)
}
