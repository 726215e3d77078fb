import Dispatch
import PushSealSystem
import Testing

/// `PeriodicThread`: when its body runs, and that `stop()` waits for a run under way.
@Suite struct PeriodicThreadTests {
    @Test("runsAtStart runs the body at once (an interval of an hour is never waited for); stop ends it")
    func runsAtStart() {
        let ran = DispatchSemaphore(value: 0)
        let runs = Locked(0)
        let thread = PeriodicThread(intervalMs: 3_600_000, runsAtStart: true) { _ in
            runs.withLock { $0 += 1 }
            ran.signal()
        }
        #expect(thread.start())
        ran.wait()
        thread.stop()
        #expect(runs.withLock { $0 } == 1)
        #expect(!thread.start(), "a stopped thread does not start again")
    }

    @Test("without runsAtStart the body first runs after an interval, then again each interval")
    func repeatsEachInterval() {
        let ran = DispatchSemaphore(value: 0)
        let runs = Locked(0)
        let thread = PeriodicThread(intervalMs: 1, runsAtStart: false) { _ in
            runs.withLock { $0 += 1 }
            ran.signal()
        }
        #expect(!thread.isStopping)
        #expect(thread.start())
        #expect(!thread.start(), "a second start does nothing")
        for _ in 0..<5 { ran.wait() }
        thread.stop()
        let after = runs.withLock { $0 }
        #expect(after >= 5)
        thread.stop()
        #expect(runs.withLock { $0 } == after, "no run after stop returned")
    }

    @Test("an hour's interval without runsAtStart: stop returns without the body having run")
    func stopBeforeFirstRun() {
        let runs = Locked(0)
        let thread = PeriodicThread(intervalMs: 3_600_000, runsAtStart: false) { _ in runs.withLock { $0 += 1 } }
        #expect(thread.start())
        thread.stop()
        #expect(runs.withLock { $0 } == 0)
    }

    @Test("stop waits for the run under way, which sees isStopping and ends early")
    func stopWaitsForTheRun() {
        let inside = DispatchSemaphore(value: 0)
        let steps = Locked(0)
        let finished = Locked(false)
        let thread = PeriodicThread(intervalMs: 3_600_000, runsAtStart: true) { t in
            inside.signal()
            while !t.isStopping { steps.withLock { $0 += 1 } }
            finished.withLock { $0 = true }
        }
        #expect(thread.start())
        inside.wait()
        thread.stop()
        #expect(finished.withLock { $0 }, "stop returned before the run ended")
        #expect(thread.isStopping)
    }

    @Test("stop before start is safe, and start after it does nothing")
    func stopBeforeStart() {
        let thread = PeriodicThread(intervalMs: 1, runsAtStart: true) { _ in Issue.record("the body ran") }
        thread.stop()
        #expect(!thread.start())
    }
}
