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
public typealias CFTypeRef = AnyObject
public typealias CFString = NSString
public typealias CFDictionary = NSDictionary
public typealias CFTypeID = UInt
public func CFGetTypeID(_ x: AnyObject?) -> CFTypeID { 0 }
public func CFBooleanGetTypeID() -> CFTypeID { 1 }
public func CFNumberIsFloatType(_ n: NSNumber) -> Bool { false }

// Security
public typealias OSStatus = Int32
public let errSecSuccess: OSStatus = 0
public let errSecItemNotFound: OSStatus = -25300
public let errSecMissingEntitlement: OSStatus = -34018
public let errSecParam: OSStatus = -50
public nonisolated(unsafe) let kSecClass: CFString = "class"
public nonisolated(unsafe) let kSecClassGenericPassword: CFString = "genp"
public nonisolated(unsafe) let kSecAttrService: CFString = "svce"
public nonisolated(unsafe) let kSecAttrAccount: CFString = "acct"
public nonisolated(unsafe) let kSecAttrAccessGroup: CFString = "agrp"
public nonisolated(unsafe) let kSecAttrLabel: CFString = "labl"
public nonisolated(unsafe) let kSecAttrAccessible: CFString = "pdmn"
public nonisolated(unsafe) let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
public nonisolated(unsafe) let kSecValueData: CFString = "v_Data"
public nonisolated(unsafe) let kSecReturnData: CFString = "r_Data"
public nonisolated(unsafe) let kSecReturnAttributes: CFString = "r_Attributes"
public nonisolated(unsafe) let kSecMatchLimit: CFString = "m_Limit"
public nonisolated(unsafe) let kSecMatchLimitOne: CFString = "m_LimitOne"
public nonisolated(unsafe) let kSecMatchLimitAll: CFString = "m_LimitAll"
public nonisolated(unsafe) var fakeKeychain: [String: Data] = [:]   // "service|account" -> data
public func fkKey(_ q: CFDictionary) -> (String, String?) {
    let d = q as? [String: Any] ?? [:]
    return (d[kSecAttrService as String] as? String ?? "", d[kSecAttrAccount as String] as? String)
}
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
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
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus {
    let (service, account) = fkKey(attributes)
    fakeKeychain["\(service)|\(account ?? "")"] = (attributes as? [String: Any] ?? [:])[kSecValueData as String] as? Data
    return errSecSuccess
}
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus {
    let (service, account) = fkKey(query)
    guard fakeKeychain["\(service)|\(account ?? "")"] != nil else { return errSecItemNotFound }
    fakeKeychain["\(service)|\(account ?? "")"] = (attributesToUpdate as? [String: Any] ?? [:])[kSecValueData as String] as? Data
    return errSecSuccess
}
public func SecItemDelete(_ query: CFDictionary) -> OSStatus {
    let (service, account) = fkKey(query)
    return fakeKeychain.removeValue(forKey: "\(service)|\(account ?? "")") == nil ? errSecItemNotFound : errSecSuccess
}

// os
public struct OSLogPrivacy: Sendable { public static let `public` = OSLogPrivacy(); public static let `private` = OSLogPrivacy() }
public struct OSLogMessage: ExpressibleByStringInterpolation {
    public struct StringInterpolation: StringInterpolationProtocol {
        public init(literalCapacity: Int, interpolationCount: Int) {}
        public mutating func appendLiteral(_ s: String) {}
        public mutating func appendInterpolation(_ s: @autoclosure @escaping () -> String, privacy: OSLogPrivacy = .private) {}
        public mutating func appendInterpolation(_ s: @autoclosure @escaping () -> Int, privacy: OSLogPrivacy = .private) {}
        public mutating func appendInterpolation(_ s: @autoclosure @escaping () -> Int32, privacy: OSLogPrivacy = .private) {}
    }
    public init(stringLiteral: String) {}
    public init(stringInterpolation: StringInterpolation) {}
}
public struct Logger: Sendable {
    public init(subsystem: String, category: String) {}
    public func info(_ m: OSLogMessage) {}
    public func error(_ m: OSLogMessage) {}
}

// CryptoKit
public protocol ContiguousBytesStub {}
public struct SymmetricKey { public init<D: ContiguousBytes>(data: D) {} }
public struct SHA256Digest: Sequence, ContiguousBytes {
    public var bytes: [UInt8] = []
    public func makeIterator() -> Array<UInt8>.Iterator { bytes.makeIterator() }
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
}
public enum SHA256 { public static func hash<D: DataProtocol>(data: D) -> SHA256Digest {
    var out: [UInt8] = []
    for salt in 0..<4 { var h = Hasher(); h.combine(salt); h.combine(Array(data)); withUnsafeBytes(of: h.finalize()) { out += $0 } }
    return SHA256Digest(bytes: out)
} }
public enum AES { public enum GCM {
    public struct SealedBox { public init<D: DataProtocol>(combined: D) throws {} }
    public static func open<AD: DataProtocol>(_ box: SealedBox, using key: SymmetricKey, authenticating: AD) throws -> Data { throw NSError(domain: "stub", code: 2) }
    public static func open(_ box: SealedBox, using key: SymmetricKey) throws -> Data { Data() }
} }
public struct SharedSecret: ContiguousBytes {
    public var bytes: [UInt8] = []
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try bytes.withUnsafeBytes(body) }
}
public protocol HPKEDiffieHellmanPrivateKey { associatedtype PublicKey }
public enum Curve25519 { public enum KeyAgreement {
    public struct PublicKey { public var raw: Data; public init(raw: Data) { self.raw = raw }; public init<D: ContiguousBytes>(rawRepresentation: D) throws { raw = rawRepresentation.withUnsafeBytes { Data($0) }; if raw.count != 32 { throw NSError(domain: "len", code: 1) } }; public var rawRepresentation: Data { raw } }
    public struct PrivateKey: HPKEDiffieHellmanPrivateKey {
        public typealias PublicKey = Curve25519.KeyAgreement.PublicKey
        public var raw: Data
        public init() { raw = Data((0..<32).map { _ in UInt8.random(in: 0...255) }) }
        public init<D: ContiguousBytes>(rawRepresentation: D) throws { raw = rawRepresentation.withUnsafeBytes { Data($0) } }
        public var rawRepresentation: Data { raw }
        public var publicKey: Curve25519.KeyAgreement.PublicKey { Curve25519.KeyAgreement.PublicKey(raw: Data(raw.reversed().map { $0 ^ 0x55 })) }
        public func sharedSecretFromKeyAgreement(with publicKeyShare: Curve25519.KeyAgreement.PublicKey) throws -> SharedSecret { SharedSecret(bytes: publicKeyShare.raw.allSatisfy { $0 == 0 } ? [UInt8](repeating: 0, count: 32) : [UInt8](repeating: 7, count: 32)) }
    }
} }
public enum HPKE {
    public struct Ciphersuite {
        public enum KEM { case Curve25519_HKDF_SHA256, P256_HKDF_SHA256 }
        public enum KDF { case HKDF_SHA256 }
        public enum AEAD { case AES_GCM_256, AES_GCM_128, chaChaPoly }
        public init(kem: KEM, kdf: KDF, aead: AEAD) {}
    }
    public struct Recipient {
        public init<SK: HPKEDiffieHellmanPrivateKey>(privateKey: SK, ciphersuite: Ciphersuite, info: Data, encapsulatedKey: Data) throws {}
        public init<SK: HPKEDiffieHellmanPrivateKey>(privateKey: SK, ciphersuite: Ciphersuite, info: Data, encapsulatedKey: Data, authenticatedBy: SK.PublicKey) throws {}
        public mutating func open<C: DataProtocol, AD: DataProtocol>(_ ciphertext: C, authenticating aad: AD) throws -> Data { throw NSError(domain: "stub", code: 2) }
    }
}

// UserNotifications
public struct UNNotificationSoundName: RawRepresentable, Hashable { public var rawValue: String; public init(rawValue: String) { self.rawValue = rawValue } }
open class UNNotificationSound: NSObject {
    public class var `default`: UNNotificationSound { UNNotificationSound() }
    public convenience init(named: UNNotificationSoundName) { self.init() }
    public class func defaultCriticalSound(withAudioVolume volume: Float) -> UNNotificationSound { UNNotificationSound() }
    public class func criticalSoundNamed(_ name: UNNotificationSoundName, withAudioVolume volume: Float) -> UNNotificationSound { UNNotificationSound() }
}
public enum UNNotificationInterruptionLevel: UInt { case passive, active, timeSensitive, critical }
open class UNNotificationAttachment: NSObject { public init(identifier: String, url: URL, options: [AnyHashable: Any]?) throws {} }
open class UNNotificationContent: NSObject {
    open var title: String { "" }
    open var userInfo: [AnyHashable: Any] { [:] }
    public override func mutableCopy() -> Any { UNMutableNotificationContent() }
}
open class UNMutableNotificationContent: UNNotificationContent {
    public var _title = ""
    public override var title: String { get { _title } set { _title = newValue } }
    public var subtitle = ""
    public var body = ""
    public var threadIdentifier = ""
    public var categoryIdentifier = ""
    public var interruptionLevel: UNNotificationInterruptionLevel = .active
    public var sound: UNNotificationSound?
    public var attachments: [UNNotificationAttachment] = []
    public var _userInfo: [AnyHashable: Any] = [:]
    public override var userInfo: [AnyHashable: Any] { get { _userInfo } set { _userInfo = newValue } }
}
open class UNNotificationRequest: NSObject {
    public var identifier: String { "" }
    public var content: UNNotificationContent { UNNotificationContent() }
}
open class UNNotification: NSObject { public var request: UNNotificationRequest { UNNotificationRequest() } }
open class UNUserNotificationCenter: NSObject {
    public class func current() -> UNUserNotificationCenter { UNUserNotificationCenter() }
    public func getDeliveredNotifications(completionHandler: @escaping @Sendable ([UNNotification]) -> Void) { completionHandler([]) }
    public func removeDeliveredNotifications(withIdentifiers identifiers: [String]) {}
}
open class UNNotificationServiceExtension: NSObject {
    open func didReceive(_ request: UNNotificationRequest, withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {}
    open func serviceExtensionTimeWillExpire() {}
}

// BackgroundTasks
open class BGTask: NSObject { public var expirationHandler: (() -> Void)?; public func setTaskCompleted(success: Bool) {} }
open class BGTaskRequest: NSObject { public var earliestBeginDate: Date? }
open class BGAppRefreshTaskRequest: BGTaskRequest { public init(identifier: String) {} }
open class BGTaskScheduler: NSObject {
    public nonisolated(unsafe) static let shared = BGTaskScheduler()
    public func register(forTaskWithIdentifier identifier: String, using queue: DispatchQueue?, launchHandler: @escaping (BGTask) -> Void) -> Bool { true }
    public func submit(_ r: BGTaskRequest) throws {}
}
extension FileManager { public func containerURL(forSecurityApplicationGroupIdentifier: String) -> URL? { nil } }
