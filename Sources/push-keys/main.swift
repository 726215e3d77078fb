// push-keys: manage push keys and the emulated device keychain.
// Thin dispatcher: each subcommand lives in its own file; add new command families to `commands`
// in PushKeysTool.swift.
import PushSealCLI

pushKeysTool.main()
