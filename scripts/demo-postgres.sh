#!/usr/bin/env bash
# `make demo-postgres`: two sender processes sharing one PostgreSQL registry while the keyset
# rotates, on a throwaway PostgreSQL (scripts/pg-throwaway.sh: started here, stopped at exit).
#   1. a KEK file, the schema (push-keys registry migrate), alice's keyset in the registry, her
#      key exported into an emulated iPhone keychain;
#   2. sender A and sender B (two push-seal batch processes) seal LINES notifications each for
#      alice at the same time, while push-keys rotate (registry + device keychain) runs;
#   3. checks: every line sealed, the registry's seal counters ≥ the seals made, and push-open
#      (the extension, on the iPhone keychain) decrypts the first and last payload of each sender;
#   4. the device token loop on the registry: tokens in the registry (push-keys token add),
#      push-seal batch --device-tokens | push-send against the mock APNs (Tests/MockAPNs, on
#      loopback), which answers 410 for two tokens; push-keys token invalidate on the outcomes
#      removes the one registered before the 410 and keeps the one registered again after it;
#   5. version 2 on the registry: a sender key in the registry, a phone that makes its own device
#      key and pins the sender key, its upload body stored by push-keys register (registration,
#      token, pins), push-seal in auth mode, push-open decrypts on the phone.
# Usage: scripts/demo-postgres.sh [--bin DIR] [--lines N]   (default .build/release, 10000 lines: several batch chunks of 2,048, so the rotation lands inside)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
lines=10000
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --lines) lines=$2; shift 2 ;;
    *) echo "usage: $0 [--bin DIR] [--lines N]" >&2; exit 64 ;;
  esac
done
for t in push-seal push-keys push-open push-send; do
  [[ -x $bin/$t ]] || { echo "demo-postgres: error: $bin/$t is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
done
# shellcheck source=scripts/pg-throwaway.sh disable=SC1091
source "$root/scripts/pg-throwaway.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/pushseal-demo-pg.XXXXXX")
chmod 700 "$work"
mock_pid=
cleanup() { if [[ -n $mock_pid ]]; then kill "$mock_pid" 2>/dev/null; wait "$mock_pid" 2>/dev/null || true; fi; pg_throwaway_stop; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "demo-postgres: error: $*" >&2; exit 1; }
APP=com.example.app TEAM=ABCDE12345 R=alice
ents() { printf '{"application-identifier":"%s","keychain-access-groups":["%s"],"application-groups":["group.%s"]}\n' "$1" "$TEAM.$APP.shared" "$APP" > "$2"; chmod 600 "$2"; }
ents "$TEAM.$APP" "$work/app.json"
ents "$TEAM.$APP.NotificationService" "$work/ext.json"

pg_throwaway_start
echo "PushSeal demo with a PostgreSQL registry — a throwaway server in $PG_DIR (Unix socket only)"
echo
"$bin/push-keys" registry new-kek --out "$work/kek"
export PUSHSEAL_REGISTRY=$PG_CONNINFO PUSHSEAL_KEK_FILE=$work/kek
"$bin/push-keys" registry migrate | sed 's/^/   migrate: /'
old=$("$bin/push-keys" generate --app-id "$APP" --recipient "$R")
"$bin/push-keys" export --app-id "$APP" --recipient "$R" --out "$work/alice.keyrecord.json" >/dev/null
"$bin/push-keys" keychain init --keychain "$work/iphone" >/dev/null
"$bin/push-keys" import --keychain "$work/iphone" --entitlements "$work/app.json" --app-id "$APP" "$work/alice.keyrecord.json" >/dev/null
rm -f "$work/alice.keyrecord.json"
echo "1. alice's keyset is in the registry (primary $old, wrapped under the KEK in $work/kek); her iPhone keychain has the key."

python3 - "$work" "$lines" "$R" <<'PY'
import json, sys
work, n, r = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for s in "AB":
    with open(f"{work}/in-{s}.jsonl", "w") as f:
        for i in range(n):
            f.write(json.dumps({"recipient": r, "notification": {"title": f"From sender {s}", "body": f"message {i}"}}) + "\n")
PY
echo "2. senders A and B seal $lines notifications each for alice, both at once, while the keyset rotates:"
"$bin/push-seal" batch --app-id "$APP" "$work/in-A.jsonl" > "$work/out-A.jsonl" 2> "$work/err-A" & a=$!
"$bin/push-seal" batch --app-id "$APP" "$work/in-B.jsonl" > "$work/out-B.jsonl" 2> "$work/err-B" & b=$!
new=$("$bin/push-keys" rotate --app-id "$APP" --recipient "$R" --grace 30d --device-keychain "$work/iphone" --device-entitlements "$work/app.json")
wait "$a" || fail "sender A failed: $(tail -2 "$work/err-A")"
wait "$b" || fail "sender B failed: $(tail -2 "$work/err-B")"
echo "   push-keys rotate: new primary $new installed on the iPhone, then promoted; $old opens messages for 30 days"

echo "3. checks:"
python3 - "$work" "$lines" "$old" "$new" <<'PY' || exit 1
import json, sys, collections
work, n, old, new = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
total = 0
kids_all = set()
for s in "AB":
    outs = [json.loads(l) for l in open(f"{work}/out-{s}.jsonl")]
    ok = [o for o in outs if "payload" in o]
    kids = collections.Counter(o["payload"]["key_id"] for o in ok)
    if len(ok) != n:
        sys.exit(f"demo-postgres: error: sender {s} sealed {len(ok)} of {n} lines")
    print(f"   sender {s}: {len(ok)} payloads, by key id: " + ", ".join(f"{k} {v}" for k, v in sorted(kids.items())))
    total += len(ok)
    kids_all |= set(kids)
    for tag, o in (("first", ok[0]), ("last", ok[-1])):
        with open(f"{work}/{s}-{tag}.payload.json", "w") as f:
            json.dump(o["payload"], f)
if not {old, new} <= set(kids_all):
    print(f"   (this run sealed with {', '.join(sorted(kids_all))} only: the rotation fell before or after both batches)")
open(f"{work}/total", "w").write(str(total))
PY
total=$(cat "$work/total")
counted=$("$bin/push-keys" list --app-id "$APP" --recipient "$R" --json | python3 -c 'import json,sys; print(sum(k["sealCount"] for ks in json.load(sys.stdin)["keysets"] for k in ks["keys"]))')
[[ $counted -ge $total ]] || fail "the registry counted $counted seals for $total payloads"
echo "   the registry's seal counters: $counted ≥ $total payloads sealed (blocks reserved ahead are counted, never fewer)"
for s in A B; do
  for tag in first last; do
    out=$(env -u PUSHSEAL_REGISTRY -u PUSHSEAL_KEK_FILE "$bin/push-open" --keychain "$work/iphone" --app-id "$APP" --entitlements "$work/ext.json" "$work/$s-$tag.payload.json")
    outcome=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o.get("outcome"), "—", o.get("title"), "/", o.get("body"))' "$out")
    [[ $outcome == decrypted* ]] || fail "push-open of sender $s's $tag payload: $outcome"
    echo "   push-open, sender $s's $tag payload on the iPhone: $outcome"
  done
done

echo "4. the device token loop on the registry (push-seal batch --device-tokens | push-send | push-keys token invalidate):"
for t in node openssl; do command -v "$t" >/dev/null || fail "$t is needed for the mock APNs (scripts/install-deps.sh)"; done
A=$(printf 'a1%.0s' {1..32}) B=$(printf 'b2%.0s' {1..32}) C=$(printf 'c3%.0s' {1..32})
t0=1800000000000 dead=1800000003000
"$bin/push-keys" generate --app-id "$APP" --recipient bob >/dev/null
"$bin/push-keys" generate --app-id "$APP" --recipient carol >/dev/null
for rt in "$R:$A" "bob:$B" "carol:$C"; do
  "$bin/push-keys" token add --app-id "$APP" --recipient "${rt%%:*}" --environment production --registered-at "$t0" "${rt#*:}" >/dev/null
done
echo "   tokens stored for alice, bob and carol (registered at $t0 ms)"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey.p8" 2>/dev/null
printf '{"keys":[{"keyId":"ABC123DEFG","teamId":"TEAM123456","p8":"%s"}],"topics":["%s"],"unregistered":{"%s":%s,"%s":%s}}\n' \
  "$work/AuthKey.p8" "$APP" "$B" "$dead" "$C" "$dead" > "$work/mock.json"
node "$root/Tests/MockAPNs/mock-apns.mjs" --config "$work/mock.json" --detached < /dev/null > "$work/mock.out" 2> "$work/mock.err" &
mock_pid=$!
while ! grep -q '^listening' "$work/mock.out" 2>/dev/null; do
  kill -0 "$mock_pid" 2>/dev/null || fail "the mock APNs did not start: $(cat "$work/mock.err")"
  sleep 0.05
done
read -r _ port ca < "$work/mock.out"
for r in "$R" bob carol; do printf '{"recipient":"%s","notification":{"title":"Hello %s","body":"from the registry"}}\n' "$r" "$r"; done > "$work/in-tokens.jsonl"
set +e
"$bin/push-seal" batch --app-id "$APP" --device-tokens "$work/in-tokens.jsonl" 2> "$work/err-tokens" \
  | "$bin/push-send" --p8 "$work/AuthKey.p8" --key-id ABC123DEFG --team-id TEAM123456 --host "127.0.0.1:$port" --ca-file "$ca" > "$work/outcomes.jsonl" 2> "$work/err-send"
sent=$?
set -e
[[ $sent -eq 2 ]] || fail "push-send exited $sent, not 2 (two 410s): $(tail -3 "$work/err-send")"
python3 - "$work/outcomes.jsonl" <<'PY'
import json, sys
for o in map(json.loads, open(sys.argv[1])):
    print(f"   push-send line {o['line']}: {o['outcome']} {o.get('status', '')} {o.get('reason', '')}".rstrip() + (f" (410 timestamp {o['timestamp']} ms)" if "timestamp" in o else ""))
PY
"$bin/push-keys" token add --app-id "$APP" --recipient carol --environment production --registered-at $((dead + 500)) "$C" >/dev/null
echo "   carol's app registers its token again at $((dead + 500)) ms, after the 410"
applied=$("$bin/push-keys" token invalidate --app-id "$APP" --outcomes "$work/outcomes.jsonl")
echo "   push-keys token invalidate: $applied"
[[ $applied == "invalidated 1, kept (re-registered) 1, unknown 0, no timestamp 0" ]] || fail "unexpected invalidation: $applied"
left=$("$bin/push-keys" token list --app-id "$APP" | cut -d' ' -f2 | tr '\n' ' ')
[[ $left == "$R carol " ]] || fail "tokens left: $left"
echo "   tokens left in the registry: $left(bob's, dead before it was registered again, is gone; the audit table has the lines)"

echo "5. version 2 on the registry: the phone makes its own key, the server seals to it in auth mode:"
sender=$("$bin/push-keys" sender generate --app-id "$APP")
sender_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["senderKeyId"])' "$sender")
echo "   push-keys sender generate: sender key $sender_id (its private half wrapped under the KEK in pushseal_sender_keys)"
"$bin/push-keys" sender export --app-id "$APP" --all > "$work/sender-keys.json"
phone=(--keychain "$work/dana-iphone" --entitlements "$work/app.json" --app-id "$APP")
"$bin/push-keys" keychain init --keychain "$work/dana-iphone" >/dev/null
env -u PUSHSEAL_REGISTRY -u PUSHSEAL_KEK_FILE "$bin/push-keys" device generate "${phone[@]}" > "$work/dana-record.json"
env -u PUSHSEAL_REGISTRY -u PUSHSEAL_KEK_FILE "$bin/push-keys" device pin-sender "${phone[@]}" "$work/sender-keys.json" >/dev/null
D=$(printf 'd4%.0s' {1..32})
python3 - "$work" "$D" "$sender_id" <<'PY'
import json, sys
work, token, sender = sys.argv[1:4]
record = json.load(open(f"{work}/dana-record.json"))
body = {"registration": record, "apnsDeviceToken": token, "apnsEnvironment": "production", "pinnedSenderKeyIds": [sender]}
json.dump(body, open(f"{work}/dana-upload.json", "w"))
print(f"   dana's iPhone: device key {record['keyId']} made on the phone (the private key never leaves it), sender key {sender} pinned")
PY
echo "   push-keys register (the upload body the iOS app POSTs): $("$bin/push-keys" register --recipient dana "$work/dana-upload.json")"
"$bin/push-keys" sender status --app-id "$APP" | tail -1 | sed 's/^/   push-keys sender status: /'
printf '{"title":"Hello dana","body":"sealed to the key your phone made"}\n' > "$work/dana-note.json"
"$bin/push-seal" --app-id "$APP" --recipient dana "$work/dana-note.json" > "$work/dana.payload.json"
python3 - "$work/dana.payload.json" "$sender_id" <<'PY' || exit 1
import json, sys
p = json.load(open(sys.argv[1]))
if p.get("sender_key_id") != sys.argv[2]:
    sys.exit(f"demo-postgres: error: the v2 payload is not sealed with sender key {sys.argv[2]}: {sorted(p)}")
print(f"   push-seal: enc_alg {p['enc_alg']}, key_id {p['key_id']}, sender_key_id {p['sender_key_id']}")
PY
out=$(env -u PUSHSEAL_REGISTRY -u PUSHSEAL_KEK_FILE "$bin/push-open" --keychain "$work/dana-iphone" --app-id "$APP" --entitlements "$work/ext.json" "$work/dana.payload.json")
outcome=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o.get("outcome"), "—", o.get("title"), "/", o.get("body"))' "$out")
[[ $outcome == decrypted* ]] || fail "push-open of dana's v2 payload: $outcome"
echo "   push-open on dana's iPhone: $outcome"

echo
echo "Done: two processes, one registry, a rotation in the middle, nothing lost; dead tokens cleaned up from push-send's 410s; a v2 phone registered and decrypted; the server and the mock are stopped and $work removed."
