#!/usr/bin/env bash
# Seal and send: `push-seal batch | push-send`, the documented pipeline (docs/apns.md).
#
# Usage: Examples/server/send.sh [LINES.jsonl]   (default: notifications.jsonl beside this script)
#   Lines as for batch.sh: {"recipient": "…", "notification": {…}}.
# Env:
#   DEVICE_TOKENS  a JSON file {"RECIPIENT": "HEX device token", …}; default: a made-up token per
#                  recipient (fine for the mock APNs)
#   P8, KEY_ID, TEAM_ID, ENVIRONMENT   your APNs provider key, its key id, your team id, and
#                  production|development. Without P8 the script starts the mock APNs
#                  (Tests/MockAPNs, needs node) with a throwaway key and sends there.
#   PUSH_SEAL, PUSH_KEYS, PUSH_SEND, APP_ID, KEYCHAIN   as for batch.sh
# Output: push-send's outcome lines on stdout ({"line", "deviceToken", "outcome", …}); the
#   summary on stderr. Exit: push-send's (0 all accepted, 2 some rejected, 75 some failed).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
push_send=${PUSH_SEND:-push-send}
app_id=${APP_ID:-com.example.app}
lines=${1:-$here/notifications.jsonl}
umask 077
work=$(mktemp -d "${TMPDIR:-/tmp}/pushseal-send.XXXXXX")
mock_pid=
trap 'if [[ -n $mock_pid ]]; then kill "$mock_pid" 2>/dev/null; wait "$mock_pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT

if [[ -z ${P8:-} ]]; then
  # The mock APNs on 127.0.0.1 with a throwaway provider key.
  P8=$work/AuthKey_MOCK000001.p8 KEY_ID=MOCK000001 TEAM_ID=TEAM000001
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$P8" 2>/dev/null
  printf '{"keys":[{"keyId":"%s","teamId":"%s","p8":"%s"}],"topics":["%s"]}\n' "$KEY_ID" "$TEAM_ID" "$P8" "$app_id" > "$work/mock.json"
  node "$here/../../Tests/MockAPNs/mock-apns.mjs" --config "$work/mock.json" --detached < /dev/null > "$work/mock.out" &
  mock_pid=$!
  while ! grep -q '^listening' "$work/mock.out" 2>/dev/null; do kill -0 "$mock_pid" || exit 69; sleep 0.05; done
  read -r _ port ca < "$work/mock.out"
  target=(--host "127.0.0.1:$port" --ca-file "$ca")
else
  : "${KEY_ID:?set KEY_ID}" "${TEAM_ID:?set TEAM_ID}"
  target=(--environment "${ENVIRONMENT:-development}")
fi

# Seal (batch.sh: push-seal batch), then give each line its recipient's device token.
"$here/batch.sh" "$lines" | python3 -c '
import json, sys, hashlib
tokens = json.load(open(sys.argv[1])) if sys.argv[1] else {}
for raw in sys.stdin:
    line = json.loads(raw)
    r = line.get("recipient", "")
    line["deviceToken"] = line.get("deviceToken") or tokens.get(r) or hashlib.sha256(r.encode()).hexdigest()
    print(json.dumps(line, separators=(",", ":")))
' "${DEVICE_TOKENS:-}" | "$push_send" --p8 "$P8" --key-id "$KEY_ID" --team-id "$TEAM_ID" "${target[@]}" -
