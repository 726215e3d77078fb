// keychain-stress: a test helper for PushSealKeychainTests (multi-process and crash tests).
// Not a user tool. Usage:
//   keychain-stress add DIR app|ext COUNT PREFIX     add COUNT items (account PREFIX-i) to the shared group
//   keychain-stress update DIR COUNT TAG             update item (stress, shared) to "TAG-i", i = 0..<COUNT
//   keychain-stress write-loop DIR                   print "ready", then update/add/delete forever (to be killed)
//   keychain-stress lookup-bench DIR N LOOKUPS       create DIR with N items (if absent), time LOOKUPS reads; prints µs/lookup and max RSS
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
    case "lookup-bench" where args.count == 5:
        let n = Int(args[3]) ?? 0, lookups = Int(args[4]) ?? 0
        if !FileManager.default.fileExists(atPath: dir.path) {
            try Keychain.create(at: dir)
            let kc = try Keychain(opening: dir, as: identity("app"))
            for i in 0..<n {
                try kc.add(service: "keyset", account: "recipient-\(i)", accessGroup: sharedGroup,
                           accessibility: .afterFirstUnlockThisDeviceOnly, data: SecretBytes(randomByteCount: 96))
            }
        }
        var before = rusage()
        getrusage(RUSAGE_SELF.rawValue, &before)
        let t0 = DispatchTime.now().uptimeNanoseconds
        let kc = try Keychain(opening: dir, as: identity("ext"))
        let first = try kc.copyData(ItemQuery(service: "keyset", account: "recipient-0", accessGroup: sharedGroup))
        let t1 = DispatchTime.now().uptimeNanoseconds
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        var total = first.byteCount
        let t2 = DispatchTime.now().uptimeNanoseconds
        for j in 0..<lookups {
            let i = (j &* 7919) % max(n, 1)
            total &+= try kc.copyData(ItemQuery(service: "keyset", account: "recipient-\(i)", accessGroup: sharedGroup)).byteCount
        }
        let t3 = DispatchTime.now().uptimeNanoseconds
        for j in 0..<lookups {
            let i = (j &* 7919) % max(n, 1)
            total &+= try kc.copyData(ItemQuery(service: "keyset", account: "recipient-\(i)")).byteCount
        }
        let t4 = DispatchTime.now().uptimeNanoseconds
        print("items=\(n) open+first-read=\(Double(t1 - t0) / 1000) us maxRSS before open \(before.ru_maxrss) KiB, after first read \(usage.ru_maxrss) KiB")
        print("lookup (group, service, account): \(Double(t3 - t2) / Double(max(lookups, 1)) / 1000) us/lookup over \(lookups)")
        print("lookup (service, account; caller groups): \(Double(t4 - t3) / Double(max(lookups, 1)) / 1000) us/lookup over \(lookups) (\(total) bytes)")
    default:
        FileHandle.standardError.write(Data("keychain-stress: error: bad arguments\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("keychain-stress: error: \(error)\n".utf8))
    exit(1)
}
