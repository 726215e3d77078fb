#!/usr/bin/env bash
# Seal notifications by CLI from a server: JSON Lines in, one sealed APNs payload per line out.
#
# Usage: Examples/server/batch.sh [LINES.jsonl | -]   (default: notifications.jsonl beside this script)
#   Each input line is {"recipient": "…", "notification": {…}} with "recipient" first; the
#   notification members are those of push-seal (title, subtitle, body, media, localizations,
#   data, iat, exp or ttl, id).
# Env:
#   PUSH_SEAL, PUSH_KEYS  the binaries (default: push-seal and push-keys on PATH)
#   APP_ID                the app's bundle identifier, the APNs topic (default com.example.app)
#   KEYCHAIN              the server keychain to use and keep; recipients without a keyset get
#                         one (push-keys generate). Default: a temporary keychain, removed at exit.
# Output (stdout): push-seal batch's lines, in input order: {"recipient", "line", "payload", "headers"},
#   or {"recipient", "line", "error"} for a line that failed ("line": the 1-based input line). Your APNs client sends each
#   payload to the recipient's device token with those headers (HTTP/2 is out of scope here).
# Exit: 0 all sealed, 2 some lines failed (the others were sealed), else push-seal's or
#   push-keys' exit code (64 usage, 65 bad data, 66 input missing, 77 permissions).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
push_seal=${PUSH_SEAL:-push-seal}
push_keys=${PUSH_KEYS:-push-keys}
app_id=${APP_ID:-com.example.app}
[[ $# -le 1 ]] || { echo "usage: $0 [LINES.jsonl | -]" >&2; exit 64; }
lines=${1:-$here/notifications.jsonl}

umask 077
work=$(mktemp -d "${TMPDIR:-/tmp}/pushseal-batch.XXXXXX")
trap 'rm -rf "$work"' EXIT
keychain=${KEYCHAIN:-$work/server-keychain}

# Read the input once (it may be stdin), so it can be scanned for recipients and then sealed.
if [[ $lines == - ]]; then
  cat > "$work/input.jsonl"
else
  [[ -r $lines ]] || { echo "batch.sh: error: cannot read $lines" >&2; exit 66; }
  cp "$lines" "$work/input.jsonl"
fi

# Demo set-up: a keyset for every recipient that has none yet. A real server already holds
# them (push-keys generate or import when the device registers; see docs/keys.md).
sed -n 's/^[[:space:]]*{[[:space:]]*"recipient"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' "$work/input.jsonl" \
  | sort -u > "$work/recipients"
while IFS= read -r recipient; do
  if ! "$push_keys" list --keychain "$keychain" --app-id "$app_id" --recipient "$recipient" 2>/dev/null | grep -q .; then
    key_id=$("$push_keys" generate --keychain "$keychain" --app-id "$app_id" --recipient "$recipient")
    echo "batch.sh: generated key $key_id for $app_id/$recipient in $keychain" >&2
  fi
done < "$work/recipients"

# Seal every line. Everything outside the notification travels in clear: the fallback alert,
# the aps fields and the APNs headers (here a one-day expiry and a sound).
status=0
"$push_seal" batch --app-id "$app_id" --keychain "$keychain" \
  --fallback-title "New message" --fallback-body "Open the app to read it" \
  --ttl 1d --sound default "$work/input.jsonl" || status=$?

total=$(grep -c . "$work/input.jsonl" || true)
echo "batch.sh: $total lines for $(wc -l < "$work/recipients" | tr -d ' ') recipients, push-seal exit $status" >&2
exit "$status"
