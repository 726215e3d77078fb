// Linux stand-ins for the few Apple framework declarations the iOS reference uses, so that
// check.sh can type-check the reference in Swift 6 mode and run its non-cryptographic logic
// (field checks, sender policy, key records, keychain layout, replay guard) on Linux.
// NOT Apple's behaviour: signatures follow Apple's documentation as far as the reference uses
// them; the keychain is an in-memory dictionary; the crypto is fake (SHA-256 is a hash of the
// bytes, X25519 gives all zero only for the all-zero point, every AES-GCM/HPKE open fails).
// The real crypto is checked by the PushSeal Swift and Python tests, not here.
import Foundation
import FoundationNetworking
#if canImport(Glibc)
import Glibc
#endif

// CoreFoundation bits
typealias CFTypeRef = AnyObject
typealias CFString = NSString
typealias CFDictionary = NSDictionary
typealias CFTypeID = UInt
func CFGetTypeID(_ x: AnyObject?) -> CFTypeID { 0 }
func CFBooleanGetTypeID() -> CFTypeID { 1 }
func CFNumberIsFloatType(_ n: NSNumber) -> Bool { false }

// Security
typealias OSStatus = Int32
let errSecSuccess: OSStatus = 0
let errSecItemNotFound: OSStatus = -25300
let errSecMissingEntitlement: OSStatus = -34018
let errSecParam: OSStatus = -50
nonisolated(unsafe) let kSecClass: CFString = "class"
nonisolated(unsafe) let kSecClassGenericPassword: CFString = "genp"
nonisolated(unsafe) let kSecAttrService: CFString = "svce"
nonisolated(unsafe) let kSecAttrAccount: CFString = "acct"
nonisolated(unsafe) let kSecAttrAccessGroup: CFString = "agrp"
nonisolated(unsafe) let kSecAttrLabel: CFString = "labl"
nonisolated(unsafe) let kSecAttrAccessible: CFString = "pdmn"
nonisolated(unsafe) let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
nonisolated(unsafe) let kSecValueData: CFString = "v_Data"
nonisolated(unsafe) let kSecReturnData: CFString = "r_Data"
nonisolated(unsafe) let kSecReturnAttributes: CFString = "r_Attributes"
nonisolated(unsafe) let kSecMatchLimit: CFString = "m_Limit"
nonisolated(unsafe) let kSecMatchLimitOne: CFString = "m_LimitOne"
nonisolated(unsafe) let kSecMatchLimitAll: CFString = "m_LimitAll"
nonisolated(unsafe) var fakeKeychain: [String: Data] = [:]   // "service|account" -> data
func fkKey(_ q: CFDictionary) -> (String, String?) {
    let d = q as? [String: Any] ?? [:]
    return (d[kSecAttrService as String] as? String ?? "", d[kSecAttrAccount as String] as? String)
}
func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    let (service, account) = fkKey(query)
    if let account {
        guard let data = fakeKeychain["\(service)|\(account)"] else { return errSecItemNotFound }
        result?.pointee = data as NSData
        return errSecSuccess
    }
    let items = fakeKeychain.keys.filter { $0.hasPrefix(service + "|") }.map { [kSecAttrAccount as String: String($0.dropFirst(service.count + 1))] }
    if items.isEmpty { return errSecItemNotFound }
    result?.pointee = items as NSArray
    return errSecSuccess
}
func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    let (service, account) = fkKey(attributes)
    fakeKeychain["\(service)|\(account ?? "")"] = (attributes as? [String: Any] ?? [:])[kSecValueData as String] as? Data
    return errSecSuccess
}
func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    let (service, account) = fkKey(query)
    guard fakeKeychain["\(service)|\(account ?? "")"] != nil else { return errSecItemNotFound }
    fakeKeychain["\(service)|\(account ?? "")"] = (attributesToUpdate as? [String: Any] ?? [:])[kSecValueData as String] as? Data
    return errSecSuccess
}
func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    let (service, account) = fkKey(query)
    return fakeKeychain.removeValue(forKey: "\(service)|\(account ?? "")") == nil ? errSecItemNotFound : errSecSuccess
}

// os
struct OSLogPrivacy: Sendable { static let `public` = OSLogPrivacy(); static let `private` = OSLogPrivacy() }
struct OSLogMessage: ExpressibleByStringInterpolation {
    struct StringInterpolation: StringInterpolationProtocol {
        init(literalCapacity: Int, interpolationCount: Int) {}
        mutating func appendLiteral(_ s: String) {}
        mutating func appendInterpolation(_ s: @autoclosure @escaping () -> String, privacy: OSLogPrivacy = .private) {}
        mutating func appendInterpolation(_ s: @autoclosure @escaping () -> Int, privacy: OSLogPrivacy = .private) {}
        mutating func appendInterpolation(_ s: @autoclosure @escaping () -> Int32, privacy: OSLogPrivacy = .private) {}
    }
    init(stringLiteral: String) {}
    init(stringInterpolation: StringInterpolation) {}
}
struct Logger: Sendable {
    init(subsystem: String, category: String) {}
    func info(_ m: OSLogMessage) {}
    func error(_ m: OSLogMessage) {}
}

// CryptoKit
protocol ContiguousBytesStub {}
struct SymmetricKey { init<D: ContiguousBytes>(data: D) {} }
struct SHA256Digest: Sequence, ContiguousBytes {
    var bytes: [UInt8] = []
    func makeIterator() -> Array<UInt8>.Iterator { bytes.makeIterator() }
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
}
enum SHA256 { static func hash<D: DataProtocol>(data: D) -> SHA256Digest {
    var out: [UInt8] = []
    for salt in 0..<4 { var h = Hasher(); h.combine(salt); h.combine(Array(data)); withUnsafeBytes(of: h.finalize()) { out += $0 } }
    return SHA256Digest(bytes: out)
} }
enum AES { enum GCM {
    struct SealedBox { init<D: DataProtocol>(combined: D) throws {} }
    static func open<AD: DataProtocol>(_ box: SealedBox, using key: SymmetricKey, authenticating: AD) throws -> Data { throw NSError(domain: "stub", code: 2) }
    static func open(_ box: SealedBox, using key: SymmetricKey) throws -> Data { Data() }
} }
struct SharedSecret: ContiguousBytes {
    var bytes: [UInt8] = []
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
}
protocol HPKEDiffieHellmanPrivateKey { associatedtype PublicKey }
enum Curve25519 { enum KeyAgreement {
    struct PublicKey { var raw: Data; init(raw: Data) { self.raw = raw }; init<D: ContiguousBytes>(rawRepresentation: D) throws { raw = rawRepresentation.withUnsafeBytes { Data($0) }; if raw.count != 32 { throw NSError(domain: "len", code: 1) } }; var rawRepresentation: Data { raw } }
    struct PrivateKey: HPKEDiffieHellmanPrivateKey {
        typealias PublicKey = Curve25519.KeyAgreement.PublicKey
        var raw: Data
        init() { raw = Data((0..<32).map { _ in UInt8.random(in: 0...255) }) }
        init<D: ContiguousBytes>(rawRepresentation: D) throws { raw = rawRepresentation.withUnsafeBytes { Data($0) } }
        var rawRepresentation: Data { raw }
        var publicKey: Curve25519.KeyAgreement.PublicKey { Curve25519.KeyAgreement.PublicKey(raw: Data(raw.reversed().map { $0 ^ 0x55 })) }
        func sharedSecretFromKeyAgreement(with publicKeyShare: Curve25519.KeyAgreement.PublicKey) throws -> SharedSecret { SharedSecret(bytes: publicKeyShare.raw.allSatisfy { $0 == 0 } ? [UInt8](repeating: 0, count: 32) : [UInt8](repeating: 7, count: 32)) }
    }
} }
enum HPKE {
    struct Ciphersuite {
        enum KEM { case Curve25519_HKDF_SHA256, P256_HKDF_SHA256 }
        enum KDF { case HKDF_SHA256 }
        enum AEAD { case AES_GCM_256, AES_GCM_128, chaChaPoly }
        init(kem: KEM, kdf: KDF, aead: AEAD) {}
    }
    struct Recipient {
        init<SK: HPKEDiffieHellmanPrivateKey>(privateKey: SK, ciphersuite: Ciphersuite, info: Data, encapsulatedKey: Data) throws {}
        init<SK: HPKEDiffieHellmanPrivateKey>(privateKey: SK, ciphersuite: Ciphersuite, info: Data, encapsulatedKey: Data, authenticatedBy: SK.PublicKey) throws {}
        mutating func open<C: DataProtocol, AD: DataProtocol>(_ ciphertext: C, authenticating aad: AD) throws -> Data { throw NSError(domain: "stub", code: 2) }
    }
}

// UserNotifications
struct UNNotificationSoundName: RawRepresentable, Hashable { var rawValue: String; init(rawValue: String) { self.rawValue = rawValue } }
class UNNotificationSound: NSObject {
    class var `default`: UNNotificationSound { UNNotificationSound() }
    convenience init(named: UNNotificationSoundName) { self.init() }
    class func defaultCriticalSound(withAudioVolume volume: Float) -> UNNotificationSound { UNNotificationSound() }
    class func criticalSoundNamed(_ name: UNNotificationSoundName, withAudioVolume volume: Float) -> UNNotificationSound { UNNotificationSound() }
}
enum UNNotificationInterruptionLevel: UInt { case passive, active, timeSensitive, critical }
class UNNotificationAttachment: NSObject { init(identifier: String, url: URL, options: [AnyHashable: Any]?) throws {} }
class UNNotificationContent: NSObject {
    var title: String { "" }
    var userInfo: [AnyHashable: Any] { [:] }
    override func mutableCopy() -> Any { UNMutableNotificationContent() }
}
class UNMutableNotificationContent: UNNotificationContent {
    var _title = ""
    override var title: String { get { _title } set { _title = newValue } }
    var subtitle = ""
    var body = ""
    var threadIdentifier = ""
    var categoryIdentifier = ""
    var interruptionLevel: UNNotificationInterruptionLevel = .active
    var sound: UNNotificationSound?
    var attachments: [UNNotificationAttachment] = []
    var _userInfo: [AnyHashable: Any] = [:]
    override var userInfo: [AnyHashable: Any] { get { _userInfo } set { _userInfo = newValue } }
}
class UNNotificationRequest: NSObject { var content: UNNotificationContent { UNNotificationContent() } }
class UNNotificationServiceExtension: NSObject {
    func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {}
    func serviceExtensionTimeWillExpire() {}
}

// BackgroundTasks
class BGTask: NSObject { var expirationHandler: (() -> Void)?; func setTaskCompleted(success: Bool) {} }
class BGTaskRequest: NSObject { var earliestBeginDate: Date? }
class BGAppRefreshTaskRequest: BGTaskRequest { init(identifier: String) {} }
class BGTaskScheduler: NSObject {
    nonisolated(unsafe) static let shared = BGTaskScheduler()
    func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?, launchHandler: @escaping (BGTask) -> Void) -> Bool { true }
    func submit(_ r: BGTaskRequest) throws {}
}
extension FileManager { func containerURL(forSecurityApplicationGroupIdentifier: String) -> URL? { nil } }
