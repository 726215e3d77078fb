#!/usr/bin/env bash
# The registry part of `make bench` (issue 15, "Performance and scale"), on a throwaway PostgreSQL
# (scripts/pg-throwaway.sh: Unix socket, no TCP, started with -F: no fsync) on the same cores.
# Prints a Markdown section.
#
# Usage: scripts/bench-registry.sh [--quick] [--big N] [--recipients N] [--rounds N] [--bin DIR]
#   --quick   a registry of 20,000, a batch over 2,000 recipients, 8,000 lines (a check of the
#             script, about 1 minute on 2 idle cores, 3 under heavy load; not the figures)
#   --big N, --recipients N, --rounds N   the sizes below (defaults 1,000,000, 100,000, 1: the
#             issue's scale, every line a recipient of its own; 13 minutes in all under a load
#             average of 5 to 12 on 2 cores, most of it the bulk load and the keychain's batch). The file keychain of R keysets is written by `push-keys registry
#             export` in batches (one flush of the file system per 500 keysets) and its batch
#             reserves a chunk's seal counters with one flush per chunk, so neither is per
#             recipient any more (before: 20 ms a keyset to make, about 100 payloads/s under load).
#   --bin DIR where push-seal, push-keys and registry-stress are built (default: .build/release)
# Measures, in one run:
#   1. bulk load: a registry of BIG (1,000,000) keysets created by registry-stress bulk-load
#      (PostgresKeyStore.bulkCopyIn, the path of `push-keys registry import`): seconds,
#      keysets/s, the database's size;
#   2. push-seal batch of 1 KB lines round-robin over R (100,000) recipients, ROUNDS (1) each, from
#      the big registry and from a file keychain holding R keysets (made by `push-keys registry
#      export` of a registry of R): payloads/s with push-seal's default --jobs (every core), the
#      registry's share of the keychain's rate;
#   3. four push-seal batch processes at once on the big registry, a quarter of the lines each:
#      total payloads/s, and the seal counters' growth against the payloads made (it must never
#      be less).
# Every output line must be a payload; errors are counted and shown.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
big=1000000
recipients=100000
rounds=1
quick=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) big=20000; recipients=2000; rounds=4; quick=1; shift ;;
    --big) big=$2; shift 2 ;;
    --recipients) recipients=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--quick] [--big N] [--recipients N] [--rounds N] [--bin DIR]" >&2; exit 64 ;;
  esac
done
lines=$((recipients * rounds))
for t in push-seal push-keys registry-stress; do
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
load() { cut -d' ' -f1-3 /proc/loadavg; }
sql() { "$PG_BIN/psql" -X -At -h "$PG_DIR" -p 5432 -U pushseal -d "$1" -c "$2"; }
load_start=$(load)
bench_start=$(now)

# 1. The big registry, bulk-loaded.
"$bin/push-keys" registry new-kek --out "$work/kek"
"$bin/push-keys" registry migrate --registry "$PG_CONNINFO" >/dev/null
read -r big_made big_s < <("$bin/registry-stress" bulk-load "$PG_CONNINFO" "$work/kek" "$APP" "$big")
[[ $big_made -eq $big ]] || { echo "bench-registry: error: bulk load made $big_made keysets, not $big" >&2; exit 70; }
big_size=$(sql pushseal "SELECT pg_size_pretty(pg_database_size('pushseal'))")

# The file keychain of R keysets: a registry of R, exported.
sql postgres "CREATE DATABASE small" >/dev/null
small="host=$PG_DIR port=5432 user=pushseal dbname=small"
"$bin/push-keys" registry migrate --registry "$small" >/dev/null
"$bin/registry-stress" bulk-load "$small" "$work/kek" "$APP" "$recipients" >/dev/null
t0=$(now)
"$bin/push-keys" registry export --registry "$small" --kek-file "$work/kek" --keychain "$work/kc" >/dev/null
t1=$(now)

# LINES lines of 1 KB notifications, round-robin over the first R recipients, and their quarters.
python3 - "$work" "$lines" "$recipients" <<'PY'
import json, sys
work, n, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
body = ("Your order has shipped and is on its way. " * 25)[:1000]
lines = [json.dumps({"recipient": f"r{i % r}", "notification": {"title": f"Order {i}", "body": body}}) + "\n" for i in range(n)]
open(f"{work}/in.jsonl", "w").writelines(lines)
for k in range(4):
    open(f"{work}/in-{k}.jsonl", "w").writelines(lines[k * n // 4:(k + 1) * n // 4])
PY

# count FILE…: "payloads errors" over the output files.
count() {
  python3 - "$@" <<'PY'
import json, sys
ok = err = 0
for path in sys.argv[1:]:
    for l in open(path):
        o = json.loads(l)
        ok += "payload" in o
        err += "error" in o
print(ok, err)
PY
}
# seal NAME IN ARGS…: one batch run alone; prints "payloads/s payloads errors".
seal() {
  local name=$1 input=$2; shift 2
  local a b
  a=$(now)
  "$bin/push-seal" batch --app-id "$APP" "$@" "$input" > "$work/out-$name.jsonl" 2> "$work/err-$name" || true
  b=$(now)
  read -r ok err < <(count "$work/out-$name.jsonl")
  echo "$(python3 -c "print(round($ok / ($b - $a)))") $ok $err"
}

# 2. One batch from the keychain, one from the big registry.
read -r kc_rate kc_ok kc_err < <(seal keychain "$work/in.jsonl" --keychain "$work/kc")
read -r reg_rate reg_ok reg_err < <(seal registry "$work/in.jsonl" --registry "$PG_CONNINFO" --kek-file "$work/kek")

# 3. Four sealers at once on the big registry.
before=$(sql pushseal "SELECT coalesce(sum(seal_count), 0) FROM pushseal_keys WHERE app_id = '$APP'")
a=$(now)
pids=()
for k in 0 1 2 3; do
  "$bin/push-seal" batch --app-id "$APP" --registry "$PG_CONNINFO" --kek-file "$work/kek" "$work/in-$k.jsonl" \
    > "$work/out-four-$k.jsonl" 2> "$work/err-four-$k" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
b=$(now)
after=$(sql pushseal "SELECT coalesce(sum(seal_count), 0) FROM pushseal_keys WHERE app_id = '$APP'")
read -r four_ok four_err < <(count "$work"/out-four-*.jsonl)
four_rate=$(python3 -c "print(round($four_ok / ($b - $a)))")
grown=$((after - before))
counters=$([[ $grown -ge $four_ok ]] && echo "ok: $grown ≥ $four_ok" || echo "UNDER-COUNTED: $grown < $four_ok")
bench_s=$(python3 -c "print(round($(now) - $bench_start))")

echo "## PostgreSQL registry (push-seal batch from PostgresKeyStore vs the file keychain)"
echo
echo "Registry of $big keysets; batch: $lines lines of 1 KB round-robin over $recipients recipients ($rounds each), push-seal batch's default --jobs (every core: $(nproc)); PostgreSQL $("$PG_BIN/postgres" --version | grep -oE '[0-9]+(\.[0-9]+)*' | head -1) on a Unix socket (fsync off), same cores; load average $load_start at the start, $(load) at the end; $bench_s s in all$( [[ $quick -eq 1 ]] && echo "; --quick: a check, not the figures, not comparable with a full run")$( [[ $quick -eq 0 && ( $big -ne 1000000 || $recipients -ne 100000 || $rounds -ne 1 ) ]] && echo "; reduced sizes: not comparable with a full run")."
echo
echo "| measurement | result |"
echo "|---|---|"
echo "| bulk load: $big keysets (registry-stress bulk-load, bulkCopyIn) | $(python3 -c "print(f'{$big_s:.1f} s, {round($big / $big_s)} keysets/s')"), database $big_size |"
echo "| file keychain of $recipients keysets (push-keys registry export) | $(python3 -c "print(f'{$t1 - $t0:.1f} s')") |"
echo "| push-seal batch, file keychain ($kc_ok payloads, $kc_err errors) | $kc_rate payloads/s |"
echo "| push-seal batch, registry of $big ($reg_ok payloads, $reg_err errors) | $reg_rate payloads/s ($(python3 -c "print(round(100 * $reg_rate / max(1, $kc_rate)))")% of the keychain's) |"
echo "| 4 push-seal batch processes at once, registry ($four_ok payloads, $four_err errors) | $four_rate payloads/s in all; seal counters grew $counters |"
echo
echo "Targets (issue 15): the registry at least 80% of the file keychain in the same run; the counters' growth never below the payloads made."
