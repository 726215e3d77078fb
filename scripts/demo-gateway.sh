#!/usr/bin/env bash
# `make demo-gateway`: push-gateway as a company's backend uses it, everything on this machine.
#   1. a throwaway PostgreSQL (scripts/pg-throwaway.sh), a KEK, push-gateway migrate, an API key
#      (push-gateway keys create, scopes send,register), the native mock APNs standing in for Apple;
#   2. TWO push-gateway serve instances on the one database (127.0.0.1, port 0: each logs its port);
#   3. 20 emulated phones, each with its own device keychain and v2 device key (push-keys device
#      generate, as the app does on first launch) and a random APNs device token;
#   4. Examples/gateway/backend.py (Python, standard library only) registers the 20 phones through
#      POST /v1/devices, sends one notification to each through POST /v1/notifications, and polls
#      GET /v1/notifications/{id} until each is accepted — requests spread over both instances;
#   5. Examples/gateway/send.mjs (Node, built-in fetch) sends a second notification to three phones;
#   6. each phone opens what APNs received with push-open (the emulated Notification Service
#      Extension). The mock records the apns-id of every request it accepted but not the body, so
#      the payload is read from the outbox row with that apns-id: the sealed bytes the gateway sent.
# Everything started here is stopped by PID at exit (the gateways with SIGTERM: they drain).
# Usage: scripts/demo-gateway.sh [--bin DIR]   (default .build/release)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--bin DIR]" >&2; exit 64 ;;
  esac
done
for t in push-gateway push-keys push-open; do
  [[ -x $bin/$t ]] || { echo "demo-gateway: error: $bin/$t is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
done
for t in python3 node openssl; do
  command -v "$t" >/dev/null || { echo "demo-gateway: error: $t is needed" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 69; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/pushseal-demo-gw.XXXXXX")
chmod 700 "$work"
APP=com.example.app TEAM=ABCDE12345 KID=ABC123DEFG PHONES=20
export GW_TOOL=demo-gateway  # gateway-stack.sh names errors with it
# shellcheck source=scripts/gateway-stack.sh disable=SC1091
source "$root/scripts/gateway-stack.sh"
cleanup() {
  gw_stack_stop
  if [[ -n ${DEMO_GATEWAY_KEEP:-} ]]; then echo "demo-gateway: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
fail() { gw_fail "$@"; }

echo "push-gateway demo — everything on this machine, in $work"
echo
gw_db_start > "$work/migrate.out"
sed 's/^/   migrate: /' "$work/migrate.out"
sender=$("$bin/push-keys" sender generate --app-id "$APP" | python3 -c 'import json,sys; print(json.load(sys.stdin)["senderKeyId"])')
PUSHSEAL_API_KEY=$("$bin/push-gateway" keys create --name demo-backend --scope send,register)
export PUSHSEAL_API_KEY
echo "1. a throwaway PostgreSQL ($PG_DIR), the schema, the app's v2 sender key $sender (push-keys sender generate), an API key (push-gateway keys create: ${PUSHSEAL_API_KEY:0:20}…, shown once)"

gw_mock_start "$work/mock-record.jsonl"
echo "   the native mock APNs (standing in for Apple) on 127.0.0.1:$MOCK_PORT"

for g in A B; do gw_start "$g" --threads 2; done
urls=("${GW_URLS[@]}")
echo "2. two push-gateway serve instances on the one database: A at ${urls[0]}, B at ${urls[1]}"

# What the app downloads from GET /v1/sender-keys (public, no API key) and pins: one file per record.
python3 - "${urls[0]}" "$work" <<'PY'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/v1/sender-keys") as answer:
    records = json.load(answer)
for n, record in enumerate(records):
    with open(f"{sys.argv[2]}/sender-key-{n}.json", "w") as f:
        json.dump(record, f)
PY
for i in $(seq -w 1 "$PHONES"); do
  phone=$work/phones/phone-$i
  mkdir -p "$phone"
  identity=(--keychain "$phone/keychain" --access-group "$TEAM.$APP.shared" --app-group "group.$APP" --app-id "$APP")
  "$bin/push-keys" keychain init --keychain "$phone/keychain" >/dev/null
  "$bin/push-keys" device generate "${identity[@]}" > "$phone/registration.json"
  "$bin/push-keys" device pin-sender "${identity[@]}" "$work"/sender-key-*.json >/dev/null
  openssl rand -hex 32 > "$phone/device-token"
  python3 -c 'import json,sys; [print(json.load(open(f))["senderKeyId"]) for f in sys.argv[1:]]' "$work"/sender-key-*.json > "$phone/pinned-sender-key-ids"
done
echo "3. $PHONES emulated phones, each with a device keychain, a v2 device key (push-keys device generate), the sender key pinned from GET /v1/sender-keys, and an APNs device token"

echo "4. Examples/gateway/backend.py (Python, standard library only), across both instances:"
python3 "$root/Examples/gateway/backend.py" --gateway "${urls[0]}" --gateway "${urls[1]}" "$work/phones" \
  > "$work/backend.jsonl" 2> "$work/backend.err" || fail "backend.py: $(tail -3 "$work/backend.err")"
sed 's/^/   /' "$work/backend.err"
python3 - "$work/backend.jsonl" <<'PY'
import collections, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
by = collections.Counter(l["status"] for l in lines)
print("   final statuses (GET /v1/notifications/{id}): " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())))
if by != {"accepted": len(lines)}:
    sys.exit("demo-gateway: error: not every notification was accepted")
PY

echo "5. Examples/gateway/send.mjs (Node, built-in fetch) sends phone-01, phone-02 and phone-03 a second one:"
node "$root/Examples/gateway/send.mjs" "${urls[1]}" phone-01 phone-02 phone-03 > "$work/node.jsonl" 2> "$work/node.err" \
  || fail "send.mjs: $(tail -3 "$work/node.err")"
python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o = json.loads(l); print("   %s: %s (id %s)" % (o["recipient"], o["status"], o["id"]))' "$work/node.jsonl"

"$PG_BIN/pg_dump" -h "$PG_DIR" -p 5432 -U pushseal -d pushseal --inserts > "$work/dump.sql"
for word in shipped "From Node" "second message"; do
  ! grep -q "$word" "$work/dump.sql" || fail "the database holds \"$word\" in clear"
done
echo "   pg_dump of the database: $(wc -l < "$work/dump.sql") lines, no word of any notification (nor in the outbox payloads, checked as text below)"

echo "6. what each phone displays (push-open on the phone's keychain, the payload APNs received):"
# The gateways stop first (SIGTERM: they drain and write their outcomes), then the mock (its record is complete).
gw_stop_gateways
echo "   requests answered: gateway A $(grep -c '"event":"request"' "$work/gateway-A.log"), gateway B $(grep -c '"event":"request"' "$work/gateway-B.log"); both stopped on SIGTERM with exit 0"
kill "$MOCK_PID"; wait "$MOCK_PID" || true
MOCK_PID=
"$PG_BIN/psql" -X -q -At -h "$PG_DIR" -p 5432 -U pushseal -d pushseal \
  -c "SELECT apns_id, recipient, convert_from(payload, 'UTF8') FROM pushseal_outbox" -F $'\t' > "$work/outbox.tsv"
for word in shipped "From Node" "second message"; do
  ! grep -q "$word" "$work/outbox.tsv" || fail "an outbox payload holds \"$word\" in clear"
done
python3 - "$work" "$work/mock-record.jsonl" "$work/outbox.tsv" <<'PY'
import json, os, sys, collections
work, record, outbox = sys.argv[1:4]
rows = {}
for line in open(outbox):
    apns_id, recipient, payload = line.rstrip("\n").split("\t", 2)
    rows[apns_id.lower()] = (recipient, payload)
seen = collections.Counter()
for r in map(json.loads, open(record)):
    if r.get("refused") or r.get("status") != 200:
        continue
    apns_id = (r.get("apnsId") or "").lower()
    if apns_id not in rows:
        sys.exit(f"demo-gateway: error: the mock accepted {apns_id}, which is in no outbox row")
    recipient, payload = rows[apns_id]
    seen[apns_id] += 1
    n = sum(1 for k in seen if rows[k][0] == recipient)
    with open(os.path.join(work, "phones", recipient, f"received-{n}.json"), "w") as f:
        f.write(payload)
twice = [k for k, v in seen.items() if v > 1]
print(f"   the mock accepted {sum(seen.values())} requests, {len(seen)} distinct notifications" + (f", {len(twice)} twice" if twice else ", none twice"))
PY
shown=0
for phone in "$work"/phones/phone-*; do
  for payload in "$phone"/received-*.json; do
    [[ -e $payload ]] || fail "$(basename "$phone") received nothing"
    # The extension's identity: the shared keychain access group, and the App Group that holds its replay cache.
    out=$("$bin/push-open" --keychain "$phone/keychain" --access-group "$TEAM.$APP.shared" --app-group "group.$APP" --app-id "$APP" "$payload") \
      || fail "push-open on $(basename "$phone") exited $?: $out"
    line=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o.get("outcome"), "—", o.get("title"), "/", o.get("body"))' "$out")
    kid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("sender_key_id"))' "$payload")
    [[ $kid == "$sender" ]] || fail "the payload for $(basename "$phone") is not sealed by the sender key $sender (sender_key_id $kid)"
    [[ $line == decrypted* ]] || fail "push-open on $(basename "$phone"): $line"
    echo "   $(basename "$phone"): $line"
    shown=$((shown + 1))
  done
done
[[ $shown -eq $((PHONES + 3)) ]] || fail "$shown notifications opened, $((PHONES + 3)) expected"

echo
echo "Done: $PHONES phones registered and $((PHONES + 3)) notifications sent through two gateway instances on one database, each accepted once by the mock APNs and opened on its phone; the database held sealed payloads only (checked in its dump). Everything is stopped and $work $([[ -n ${DEMO_GATEWAY_KEEP:-} ]] && echo kept || echo removed)."
