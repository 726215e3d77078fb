import Foundation
import PushSealSystem
import Testing

/// `FileDescriptor.isReadable(timeoutMilliseconds:)`, `WakeUpPipe`, `PollSet` and `StopSignals.wait(for:wake:)`
/// (what push-seal batch uses to end a chunk when input pauses). The stop signals themselves are
/// tested through the push-seal binary (CLITests' BatchPipelineCLITests): installing them here
/// would change how the test runner itself takes Ctrl-C.
@Suite struct ReadinessTests {
    @Test func aPipeIsReadableOnlyWithDataOrAfterItsWriterClosed() throws {
        let pipe = Pipe()
        let input = FileDescriptor(borrowing: pipe.fileHandleForReading.fileDescriptor, path: "pipe")
        #expect(try !input.isReadable(timeoutMilliseconds: 0))
        pipe.fileHandleForWriting.write(Data("x\n".utf8))
        #expect(try input.isReadable(timeoutMilliseconds: 0))
        #expect(try input.read(upToCount: 2) == Array("x\n".utf8))
        #expect(try !input.isReadable(timeoutMilliseconds: 0))
        try pipe.fileHandleForWriting.close()
        #expect(try input.isReadable(timeoutMilliseconds: 0)) // the end of the file: read returns 0
        #expect(try input.read(upToCount: 1).isEmpty)
    }

    @Test func aWaitEndsOnTheWakeUpOrOnInputWhicheverComes() throws {
        let pipe = Pipe()
        let input = FileDescriptor(borrowing: pipe.fileHandleForReading.fileDescriptor, path: "pipe")
        let wake = try WakeUpPipe()
        let wakeEnd = FileDescriptor(borrowing: wake.readEnd, path: "wake-up pipe")
        // Woken from another thread while no input is there.
        Thread.detachNewThread { wake.wake() }
        #expect(try StopSignals.wait(for: input, wake: wake) == .woken)
        wake.drain()
        #expect(try !wakeEnd.isReadable(timeoutMilliseconds: 0), "drain leaves the pipe quiet")
        // Input from another thread while nobody wakes it.
        let writer = pipe.fileHandleForWriting
        Thread.detachNewThread { writer.write(Data("line\n".utf8)) }
        #expect(try StopSignals.wait(for: input, wake: wake) == .readable)
        #expect(try StopSignals.wait(for: input) == .readable)
        // Both at once: the wake-up is reported first (a finished worker gets its chunk at once).
        wake.wake()
        #expect(try StopSignals.wait(for: input, wake: wake) == .woken)
        wake.drain()
        #expect(!StopSignals.isRequested)
    }

    @Test func aPollSetReportsEachDescriptorOnItsOwn() throws {
        let quiet = try WakeUpPipe(), woken = try WakeUpPipe()
        let empty = Pipe()
        let writable = empty.fileHandleForWriting.fileDescriptor
        let set = PollSet()
        set.add(quiet.readEnd, read: true, write: false)
        set.add(woken.readEnd, read: true, write: false)
        set.add(writable, read: false, write: true)
        #expect(set.count == 3)
        // Only the empty pipe's write end is ready.
        #expect(try set.wait(timeoutMilliseconds: 0) == 1)
        #expect(set.readiness(at: 0) == (false, false, false) && set.readiness(at: 1) == (false, false, false))
        #expect(set.readiness(at: 2).writable && set.descriptor(at: 2) == writable)
        // Woken from another thread while the set waits without a limit.
        Thread.detachNewThread { woken.wake() }
        set.removeAll()
        set.add(quiet.readEnd, read: true, write: false)
        set.add(woken.readEnd, read: true, write: false)
        #expect(try set.wait(timeoutMilliseconds: -1) == 1)
        #expect(!set.readiness(at: 0).readable && set.readiness(at: 1).readable)
        woken.drain()
        #expect(try set.wait(timeoutMilliseconds: 0) == 0)
    }
}
