#!/usr/bin/env bash
# Destroy keys past their grace window (notAfter) in a server or device keychain.
#
# Usage: Keys/prune.sh KEYCHAIN [push-keys identity options, e.g. --entitlements app.json] [--now UNIX]
# Env: PUSH_KEYS (the push-keys binary; default: push-keys on PATH).
# Output: one line per destroyed key: APP RECIPIENT KEY_ID (tab-separated). Idempotent.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 KEYCHAIN [identity options] [--now UNIX]" >&2
  exit 64
fi
keychain=$1
shift
push_keys=${PUSH_KEYS:-push-keys}
"$push_keys" prune --keychain "$keychain" "$@"
