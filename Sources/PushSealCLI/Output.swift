#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import PushSealSystem

/// Writing to stdout and stderr without buffering surprises, and small helpers for output.
///
/// Standard output is data: the first write to it that fails is remembered (``standardOutputErrno``)
/// and every later one is skipped, so a consumer never gets a stream with a hole in it. ``Tool``
/// turns a remembered failure into `TOOL: error: cannot write to standard output: …` and exit 74
/// (quietly for `EPIPE`, a reader that went away). Failed writes to standard error are ignored:
/// there is nowhere left to report them.
public enum Output {
    /// Writes `text` to standard output (data only); skipped once a write to it has failed.
    public static func stdout(_ text: String) {
        writeStandardOutput { try $0.writeAll(text) }
    }

    /// Writes `text` to standard error (diagnostics).
    public static func stderr(_ text: String) {
        _ = write(to: .standardError) { try $0.writeAll(text) }
    }

    /// Writes raw bytes to standard output; skipped once a write to it has failed.
    public static func stdout(bytes: [UInt8]) {
        writeStandardOutput { try $0.writeAll(bytes) }
    }

    /// Writes raw bytes to standard output, for a command that must stop at the first failed
    /// write (e.g. `push-seal batch` between chunks).
    /// - Throws: ``CLIError/standardOutputFailed(errno:)`` (exit 74) when this write or an
    ///   earlier one failed.
    public static func writeStandardOutput(_ bytes: [UInt8]) throws {
        stdout(bytes: bytes)
        if let e = standardOutputErrno { throw CLIError.standardOutputFailed(errno: e) }
    }

    /// The `errno` of the first failed write to standard output (e.g. `ENOSPC`, or `EPIPE` when
    /// the reading end of a pipe was closed), or `nil` while every write succeeded.
    public static var standardOutputErrno: Int32? { standardOutput.withLock { $0 } }

    /// The first failed stdout write, shared by every thread that prints.
    private static let standardOutput = Locked<Int32?>(nil)

    /// Runs `writeAll` on standard output unless a write to it has failed before.
    private static func writeStandardOutput(_ writeAll: (FileDescriptor) throws -> Void) {
        // Holding the lock for the write also keeps two threads' lines whole.
        standardOutput.withLock { failure in
            guard failure == nil else { return }
            failure = write(to: .standardOutput, writeAll)
        }
    }

    /// Runs `writeAll` (one of `FileDescriptor`'s `writeAll` entries) on `file`.
    /// - Returns: `nil` on success, else the `errno` of the failed write.
    private static func write(to file: FileDescriptor, _ writeAll: (FileDescriptor) throws -> Void) -> Int32? {
        do {
            try writeAll(file)
            return nil
        } catch let e as SystemError {
            return e.errno
        } catch {
            return 0
        }
    }

    /// `true` when file descriptor `fd` is a terminal (e.g. 1 for stdout).
    public static func isTerminal(_ fd: Int32) -> Bool { FileDescriptor(borrowing: fd, path: "").isTerminal }

    /// `strerror(e)` as a Swift string, e.g. `No space left on device`.
    public static func errorText(_ e: Int32) -> String { errnoText(e) }

    /// `text` made safe for one diagnostic line on a terminal: every character that could break
    /// the line or drive the terminal is shown as a visible escape, Swift style: `\n`, `\r`,
    /// `\t`, and `\u{1B}` for the rest of C0 (U+0000–U+001F), DEL (U+007F), C1
    /// (U+0080–U+009F), the line and paragraph separators (U+2028, U+2029) and the bidirectional
    /// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069), which can reorder
    /// what the line shows. Everything else, backslashes included, is kept as it is.
    public static func terminalSafe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where needsEscape(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}

extension Output {
    /// Refuses to write secret bytes (`what`, e.g. `key bytes`) to a standard output that others
    /// could read: a terminal (the bytes would stay in its scrollback), or a regular file with any
    /// group or other permission bit (`push-keys export > file` with the usual umask makes a
    /// 0644 file). Pipes, sockets and 0600 files are accepted; `fstat(1)` decides.
    /// - Throws: `CLIError` 64 (`usage`), `refusing to print key bytes to a terminal` or
    ///   `refusing to write key bytes to standard output: a regular file with mode 644 (others can read it)`.
    /// - Parameters:
    ///   - what: what would be written, e.g. `key bytes`.
    ///   - hint: the hint for a terminal (how to write to a file or pipe instead).
    ///   - fileHint: the hint for a readable file.
    public static func refuseUnsafeStandardOutput(for what: String, hint: String,
                                                  fileHint: String = "chmod 600 the file first, or use --out FILE (created with mode 0600)") throws {
        if isTerminal(1) { throw CLIError.usage("refusing to print \(what) to a terminal", hint: hint) }
        guard let status = try? PrivateFile.status(of: .standardOutput), status.kind == .regular, status.mode & 0o077 != 0 else { return }
        throw CLIError.usage("refusing to write \(what) to standard output: a regular file with mode \(String(status.mode, radix: 8)) (others can read it)",
                             hint: fileHint)
    }
}
