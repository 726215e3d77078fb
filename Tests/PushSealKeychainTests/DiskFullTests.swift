import PushSealSystem
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import PushSealKeychain

/// Reliability review R11: a full disk under the keychain is `errSecDiskFull` (-34), not a
/// read error: the tools say the keychain is full (push-seal's line error `keyStoreUnwritable`).
@Suite struct DiskFullTests {
    @Test(arguments: [ENOSPC, EDQUOT])
    func aFullFileSystemIsDiskFull(errno: Int32) {
        let e = Posix.keychainError(SystemError.call("write", "/kc/tmp/.tmp-1", errno: errno))
        #expect(e.code == .diskFull)
        #expect(e.osStatus == -34)
        #expect(e.statusName == "errSecDiskFull")
        #expect(e.suggestion?.contains("free space") == true)
        #expect(Posix.ioError("write", "/kc/items/x.item", errno).code == .diskFull)
    }

    @Test func otherIOErrorsStayIO() {
        #expect(Posix.keychainError(SystemError.call("write", "/kc/tmp/.tmp-1", errno: EIO)).code == .io)
        #expect(Posix.ioError("read", "/kc/items/x.item", EIO).code == .io)
    }
}
