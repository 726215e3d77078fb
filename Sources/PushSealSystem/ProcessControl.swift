#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few process-wide controls a command-line tool needs.
public enum ProcessControl {
    /// Ignores `SIGPIPE`, so a write to a pipe whose reader has gone fails with `EPIPE`
    /// instead of killing the process.
    public static func ignoreBrokenPipe() { signal(SIGPIPE, SIG_IGN) }

    /// Ends the process with `status` (0–255), running `atexit` handlers.
    public static func exit(_ status: Int32) -> Never {
        #if canImport(Glibc)
        Glibc.exit(status)
        #else
        Darwin.exit(status)
        #endif
    }

    /// The process's arguments after the program name, as their raw bytes (not valid UTF-8 is
    /// kept as it is, unlike `CommandLine.arguments`, which replaces it with U+FFFD).
    public static func rawArguments() -> [[UInt8]] {
        let count = Int(CommandLine.argc)
        guard count >= 2 else { return [] }
        return (1..<count).map { i -> [UInt8] in
            guard let arg = CommandLine.unsafeArgv[i] else { return [] }
            return Array(UnsafeRawBufferPointer(start: arg, count: strlen(arg)))
        }
    }
}
