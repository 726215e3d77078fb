#!/usr/bin/env bash
# `make demo-postgres`: two sender processes sharing one PostgreSQL registry while the keyset
# rotates, on a throwaway PostgreSQL (scripts/pg-throwaway.sh: started here, stopped at exit).
#   1. a KEK file, the schema (push-keys registry migrate), alice's keyset in the registry, her
#      key exported into an emulated iPhone keychain;
#   2. sender A and sender B (two push-seal batch processes) seal LINES notifications each for
#      alice at the same time, while push-keys rotate (registry + device keychain) runs;
#   3. checks: every line sealed, the registry's seal counters ≥ the seals made, and push-open
#      (the extension, on the iPhone keychain) decrypts the first and last payload of each sender.
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
for t in push-seal push-keys push-open; do
  [[ -x $bin/$t ]] || { echo "demo-postgres: error: $bin/$t is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
done
# shellcheck source=scripts/pg-throwaway.sh disable=SC1091
source "$root/scripts/pg-throwaway.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/pushseal-demo-pg.XXXXXX")
chmod 700 "$work"
cleanup() { pg_throwaway_stop; rm -rf "$work"; }
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
echo
echo "Done: two processes, one registry, a rotation in the middle, nothing lost; the server is stopped and $work removed."
