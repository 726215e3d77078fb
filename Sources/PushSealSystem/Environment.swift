#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process environment.
public enum Environment {
    /// The value of environment variable `name`, or `nil` (`getenv`).
    public static func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }

    /// Sets environment variable `name` to `value` (`setenv`, overwriting).
    public static func set(_ name: String, to value: String) { setenv(name, value, 1) }

    /// The directory of the running executable (`/proc/self/exe` resolved), or `nil`.
    public static func executableDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4097)
        let n = buffer.withUnsafeMutableBufferPointer { b -> Int in
            guard let base = b.baseAddress else { return -1 }
            return readlink("/proc/self/exe", base, 4096)
        }
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }
}
