#!/usr/bin/env bash
# The registry part of `make bench` (issue 15): push-seal batch sealing from a PostgreSQL
# registry against the same batch from a file keychain, in one run, on a throwaway PostgreSQL
# (scripts/pg-throwaway.sh: Unix socket, no TCP) on the same cores. Prints a Markdown section.
#
# Usage: scripts/bench-registry.sh [--quick] [--bin DIR]
#   --quick   200 recipients and 10,000 lines (a check, not the figures)
#   --bin DIR where push-seal and push-keys are built (default: .build/release)
# Measures: the bulk load (push-keys registry import of a file keychain's N keysets: seconds,
# keysets/s, the database's size); push-seal batch of 1 KB lines round-robin over the N
# recipients from the keychain and from the registry (lines/s, the registry's share of the
# keychain's rate); every output line a payload, none an error.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
recipients=2000
lines=100000
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) recipients=200; lines=10000; shift ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--quick] [--bin DIR]" >&2; exit 64 ;;
  esac
done
for t in push-seal push-keys; do
  [[ -x $bin/$t ]] || { echo "bench-registry: error: $bin/$t is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
done
# shellcheck source=scripts/pg-throwaway.sh disable=SC1091
source "$root/scripts/pg-throwaway.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-registry.XXXXXX")
cleanup() { pg_throwaway_stop; rm -rf "$work"; }
trap cleanup EXIT
pg_throwaway_start
APP=com.example.app
now() { python3 -c 'import time; print(time.monotonic())'; }

# N keysets in a file keychain (two generators at once, one per core; the keychain made first).
"$bin/push-keys" keychain init --keychain "$work/kc" >/dev/null
seq 0 $((recipients - 1)) | xargs -P 2 -I{} "$bin/push-keys" generate --keychain "$work/kc" --app-id "$APP" --recipient "r{}" >/dev/null
"$bin/push-keys" registry new-kek --out "$work/kek"
"$bin/push-keys" registry migrate --registry "$PG_CONNINFO" >/dev/null
t0=$(now)
"$bin/push-keys" registry import --keychain "$work/kc" --registry "$PG_CONNINFO" --kek-file "$work/kek" >/dev/null
t1=$(now)
size=$("$PG_BIN/psql" -X -At -h "$PG_DIR" -p 5432 -U pushseal -d pushseal -c "SELECT pg_size_pretty(pg_database_size('pushseal'))")

# LINES lines of 1 KB notifications, round-robin over the recipients.
python3 - "$work/in.jsonl" "$lines" "$recipients" <<'PY'
import json, sys
path, n, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
body = ("Your order has shipped and is on its way. " * 25)[:1000]
with open(path, "w") as f:
    for i in range(n):
        f.write(json.dumps({"recipient": f"r{i % r}", "notification": {"title": f"Order {i}", "body": body}}) + "\n")
PY

# seal NAME ARGS…: one batch run; prints "lines/s payloads errors".
seal() {
  local name=$1; shift
  local a b
  a=$(now)
  "$bin/push-seal" batch --app-id "$APP" "$@" "$work/in.jsonl" > "$work/out-$name.jsonl" 2> "$work/err-$name" || true
  b=$(now)
  python3 - "$work/out-$name.jsonl" "$lines" "$a" "$b" <<'PY'
import json, sys
path, n, a, b = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
outs = [json.loads(l) for l in open(path)]
print(round(n / (b - a)), sum(1 for o in outs if "payload" in o), sum(1 for o in outs if "error" in o))
PY
}
read -r kc_rate kc_ok kc_err < <(seal keychain --keychain "$work/kc")
read -r reg_rate reg_ok reg_err < <(seal registry --registry "$PG_CONNINFO" --kek-file "$work/kek")

echo "## PostgreSQL registry (push-seal batch from PostgresKeyStore vs the file keychain)"
echo
echo "$recipients recipients, $lines lines of 1 KB, push-seal batch's default --jobs, PostgreSQL $("$PG_BIN/postgres" --version | grep -oE '[0-9]+(\.[0-9]+)*' | head -1) on a Unix socket, same cores$( [[ $lines -lt 100000 ]] && echo "; --quick: a check, not the figures")."
echo
echo "| measurement | result |"
echo "|---|---|"
echo "| bulk load: registry import of $recipients keysets | $(python3 -c "print(f'{$t1 - $t0:.2f} s, {round($recipients / ($t1 - $t0))} keysets/s')"), database $size |"
echo "| push-seal batch, file keychain ($kc_ok payloads, $kc_err errors) | $kc_rate lines/s |"
echo "| push-seal batch, registry ($reg_ok payloads, $reg_err errors) | $reg_rate lines/s ($(python3 -c "print(round(100 * $reg_rate / max(1, $kc_rate)))")% of the keychain's) |"
echo
echo "Target (issue 15): the registry at least 80% of the file keychain in the same run."
