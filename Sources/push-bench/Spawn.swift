import PushSealSystem
import Dispatch

/// What one child process cost (``ChildProcess/Exit``): status, wall time, peak RSS.
typealias SpawnResult = ChildProcess.Exit

/// Runs `argv` to completion; status 127 when it could not start.
func runChild(_ argv: [String], stdin: ChildProcess.Stream = .null, stdout: ChildProcess.Stream = .null,
              stderr: ChildProcess.Stream = .null) -> SpawnResult {
    ChildProcess.run(argv, stdin: stdin, stdout: stdout, stderr: stderr)
}

/// Runs every command in `commands` at once, each fed `lines` copies of `line` on its standard
/// input by its own feeder thread, standard output discarded; returns the wall time until the
/// last one exits, the worst exit status and the largest peak RSS.
func runFed(_ commands: [[String]], line: [UInt8], lines: [Int]) -> SpawnResult {
    let start = monotonicNanoseconds()
    var children: [ChildProcess] = []
    let group = DispatchGroup()
    for (command, count) in zip(commands, lines) {
        guard let pipe = try? FileDescriptor.makePipe() else { return SpawnResult(status: 127) }
        let child = ChildProcess.spawn(command, stdin: .descriptor(pipe.read.rawValue))
        pipe.read.close()
        guard let child else { continue }
        children.append(child)
        group.enter()
        let writeEnd = SendableDescriptor(pipe.write)
        DispatchQueue.global().async {
            feed(writeEnd.file, line: line, count: count)
            writeEnd.file.close()
            group.leave()
        }
    }
    var worst: Int32 = children.count == commands.count ? 0 : 127
    var rss = 0
    for child in children {
        let r = child.wait(since: start)
        worst = max(worst, r.status)
        rss = max(rss, r.maxRSSKiB)
    }
    group.wait()
    return SpawnResult(status: worst, wallNanoseconds: monotonicNanoseconds() - start, maxRSSKiB: rss)
}

/// A pipe's write end handed to its one feeder thread.
///
/// `@unchecked Sendable`: after the hand-over only the feeder uses (and closes) it.
private struct SendableDescriptor: @unchecked Sendable {
    let file: FileDescriptor
    init(_ file: FileDescriptor) { self.file = file }
}

/// Writes `count` copies of `line` to `file` in blocks of up to 1,000 lines; stops on a write
/// error (the child exited early: its status tells).
private func feed(_ file: FileDescriptor, line: [UInt8], count: Int) {
    let perBlock = 1_000
    let block = Array([[UInt8]](repeating: line, count: perBlock).joined())
    var remaining = count
    while remaining > 0 {
        let n = min(remaining, perBlock)
        let ok = (try? file.writeAll(n == perBlock ? block : Array(block[0 ..< n * line.count]))) != nil
        if !ok { return }
        remaining -= n
    }
}
