// outbox-stress: one outbox worker in its own process, for PushSealServerTests' kill tests (a
// SIGKILL at any moment loses nothing accepted). Not a product.
//
//   outbox-stress REGISTRY KEK-FILE APP-ID HOST:PORT CA-FILE P8 KEY-ID TEAM-ID LEASE-MS
//
// Prints "started INSTANCE" once the worker runs; SIGTERM drains it and exits 0.
import PushSealAPNs
import PushSealRegistry
import PushSealServer
import PushSealSystem

/// Writes `text` to descriptor 1 or 2 at once.
func say(_ fd: Int32, _ text: String) {
    try? (fd == 1 ? FileDescriptor.standardOutput : FileDescriptor.standardError).writeAll(Array(text.utf8))
}

let a = CommandLine.arguments
guard a.count == 10, let leaseMs = Int64(a[9]) else {
    say(2, "usage: outbox-stress REGISTRY KEK-FILE APP-ID HOST:PORT CA-FILE P8 KEY-ID TEAM-ID LEASE-MS\n")
    ProcessControl.exit(64)
}
do {
    try StopSignals.install()
    let store = try ServerStore.open(.registry(connectionString: a[1], kekFile: a[2]))
    let outbox = try Outbox(store: store, configuration: Outbox.Configuration(sealer: SealerConfiguration(appID: a[3]), environment: .development))
    var client = APNsClient.Configuration(endpoint: try APNsEndpoint(hostAndPort: a[4], caFile: a[5]))
    client.reconnectBaseDelaySeconds = 0.01
    var settings = OutboxWorker.Configuration()
    settings.leaseMs = leaseMs
    settings.claimBatch = 50
    settings.pollIntervalMs = 100
    let worker = try OutboxWorker(outbox: outbox, apns: APNsProviderConfiguration(p8Path: a[6], keyID: a[7], teamID: a[8], client: client),
                                  configuration: settings)
    try worker.start()
    say(1, "started \(settings.instanceID)\n")
    while !StopSignals.isRequested { pauseThread(seconds: 0.05) }
    worker.drain()
    ProcessControl.exit(0)
} catch {
    say(2, "outbox-stress: error: \(error)\n")
    ProcessControl.exit(1)
}
