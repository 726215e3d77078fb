#!/usr/bin/env bash
# The gateway part of `make bench` (issue 23 "Speed"; `make bench-gateway` alone): push-gateway
# end to end on this machine, side by side with the `push-seal batch | push-send` pipeline in the
# same run, with the same registry, keys and native mock APNs. Prints a Markdown section on stdout.
#
# Usage: scripts/bench-gateway.sh [--quick] [--bin DIR]
#   --quick   small sizes (a check of the script, not the figures): 2,000 notifications per
#             throughput row, 3 s of latency, a 4,000-notification RSS run, 8 recipients each
#   --bin DIR where push-gateway, push-keys, push-seal, push-send and registry-stress are built
#             (default .build/release)
# Knobs (environment): BENCH_GATEWAY_N (the RSS run's notifications, 1,000,000),
#   BENCH_GATEWAY_THROUGHPUT_N (per throughput row, 50,000), BENCH_GATEWAY_LATENCY_SECONDS (20),
#   BENCH_GATEWAY_LATENCY_RATE (single requests a second offered in the latency row, 500),
#   BENCH_GATEWAY_RECIPIENTS (per format, 64), BENCH_GATEWAY_CLIENTS (load generator threads for
#   the batches, 8), BENCH_GATEWAY_THREADS (each instance's --threads, 8: a request waits for
#   the database, so more threads than cores keep the cores busy), BENCH_GATEWAY_KEEP=1 keeps the work directory,
#   BENCH_GATEWAY_ONLY=latency runs the latency row alone (no ceilings, throughput or RSS rows: a
#   quick iteration on the single-request path; its table has that row only),
#   BENCH_GATEWAY_PROFILE=1 loads pg_stat_statements and writes each phase's statements (calls,
#   total ms, planning ms, WAL bytes) to stderr (it costs a little: figures of such a run are not the ones to publish),
#   BENCH_GATEWAY_PERF=DIR records the whole machine (perf record -a -g) during each gateway
#   throughput row and the latency row into DIR/gateway-v1.data, DIR/gateway-v2.data and
#   DIR/latency.data (read with perf report -i).
#
# The stack (scripts/gateway-stack.sh, as make demo-gateway starts it): a throwaway PostgreSQL
# WITH fsync and synchronous_commit on (a commit waits for the disk, as in production), with the
# server settings docs/gateway.md recommends for production ($pg_settings below: group commit,
# WAL buffers and compression, fewer checkpoints; none weakens durability), the native mock APNs, two
# `push-gateway serve` instances on the one database (BENCH_GATEWAY_THREADS HTTP threads and 1 APNs connection
# each, rate limit lifted). Recipients: R v1 keysets ("r0"…, registry-stress bulk-load, tokens by
# push-keys token add) and R v2 installations ("d0"…: push-keys device generate, registered
# through POST /v1/devices); the app has a sender key, so v2 is auth mode. Notifications: a title
# and a 300-byte body each, round robin over the recipients.
#
# Measures, in one run:
#   1. the load generators' ceilings against a trivial sink (Benchmarks/gateway_load.py sink):
#      gateway_load.py's batch requests/s, and the open-loop generator's (Benchmarks/gateway_rate.c,
#      C on libcurl, built here with cc) latency and own send lag at 500 single requests/s;
#   2. throughput, v1 and v2: the pipeline (push-seal batch --registry --device-tokens | push-send,
#      one process each) and the gateway (POSTs of 500 items from the generator's threads spread
#      over both instances; from the first send to the last outcome committed, the rows'
#      finished_at), notifications accepted by the mock per second, and the ratio; and the CPU
#      seconds the gateways, PostgreSQL and the mock used in that time (/proc/PID/stat);
#   3. latency: single-notification POSTs at 500/s offered (BENCH_GATEWAY_LATENCY_RATE), open loop (gateway_rate, 64 keep-alive
#      connections), for S seconds (v2): p50/p99 time to the 202 from each request's due time
#      (the figure: a queue in front of the server counts), from its send time, and the
#      generator's own send lag; from the 202 to the outcome (the row's finished_at: the
#      worker's commit after the mock accepted it);
#   4. peak RSS (VmHWM) of each instance over a run of N notifications through two fresh instances,
#      and that run's time.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
n=${BENCH_GATEWAY_N:-1000000}
tn=${BENCH_GATEWAY_THROUGHPUT_N:-50000}
lat_s=${BENCH_GATEWAY_LATENCY_SECONDS:-20}
lat_rate=${BENCH_GATEWAY_LATENCY_RATE:-500}
recipients=${BENCH_GATEWAY_RECIPIENTS:-64}
clients=${BENCH_GATEWAY_CLIENTS:-8}
threads=${BENCH_GATEWAY_THREADS:-8}
only=${BENCH_GATEWAY_ONLY:-}
[[ -z $only || $only == latency ]] || { echo "bench-gateway: error: BENCH_GATEWAY_ONLY takes latency (or nothing), not $only" >&2; exit 64; }
quick=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) n=4000; tn=2000; lat_s=3; recipients=8; quick=1; shift ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--quick] [--bin DIR]" >&2; exit 64 ;;
  esac
done
for t in push-gateway push-keys push-seal push-send registry-stress; do
  [[ -x $bin/$t ]] || { echo "bench-gateway: error: $bin/$t is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
done
for t in python3 openssl; do
  command -v "$t" >/dev/null || { echo "bench-gateway: error: $t is needed" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 69; }
done
(( n % 500 == 0 && tn % 500 == 0 && n > 0 && tn > 0 )) || { echo "bench-gateway: error: BENCH_GATEWAY_N and BENCH_GATEWAY_THROUGHPUT_N must be multiples of 500" >&2; exit 64; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-gateway.XXXXXX")
chmod 700 "$work"
APP=com.example.app TEAM=ABCDE12345 KID=ABC123DEFG
export GW_TOOL=bench-gateway  # gateway-stack.sh names errors with it
# shellcheck source=scripts/gateway-stack.sh disable=SC1091
source "$root/scripts/gateway-stack.sh"
sink_pid=
cleanup() {
  [[ -n ${perf_pid:-} ]] && { kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true; }
  [[ -n $sink_pid ]] && { kill "$sink_pid" 2>/dev/null || true; wait "$sink_pid" 2>/dev/null || true; }
  gw_stack_stop
  if [[ -n ${BENCH_GATEWAY_KEEP:-} ]]; then echo "bench-gateway: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
load=$root/Benchmarks/gateway_load.py
now() { python3 -c 'import time; print(time.monotonic())'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
bench_start=$(now)
load_start=$(loadavg)

# The generator of the latency row.
rate_gen=$work/gateway_rate
# shellcheck disable=SC2046 # pkg-config's flags, word-split on purpose
"${CC:-cc}" -std=c11 -O2 -Wall -Wextra -Werror -o "$rate_gen" "$root/Benchmarks/gateway_rate.c" $(pkg-config --cflags --libs libcurl) ||
  { echo "bench-gateway: error: Benchmarks/gateway_rate.c does not build" >&2; echo "hint: scripts/install-deps.sh (a C compiler, libcurl4-openssl-dev)" >&2; exit 69; }

# PostgreSQL: fsync (PG_THROWAWAY_FSYNC) and synchronous_commit on, and the settings
# docs/gateway.md recommends for production.
pg_settings="-c synchronous_commit=on -c shared_buffers=128MB -c wal_buffers=16MB -c wal_compression=on -c max_wal_size=4GB -c checkpoint_timeout=15min -c commit_delay=200 -c commit_siblings=4"
[[ -n ${BENCH_GATEWAY_PROFILE:-} ]] && pg_settings+=" -c shared_preload_libraries=pg_stat_statements,auto_explain -c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on -c auto_explain.log_min_duration=${BENCH_GATEWAY_PROFILE_EXPLAIN_MS:-100} -c auto_explain.log_analyze=on"
export PG_THROWAWAY_FSYNC=on PG_THROWAWAY_SETTINGS=$pg_settings
gw_db_start > /dev/null
sql() { "$PG_BIN/psql" -X -q -At -h "$PG_DIR" -p 5432 -U pushseal -d pushseal -c "$1"; }
# profile NAME: with BENCH_GATEWAY_PROFILE, the statements since the last call (to stderr), then reset.
profile() {
  [[ -n ${BENCH_GATEWAY_PROFILE:-} ]] || return 0
  echo "--- statements: $1 (calls | total ms | mean ms | planning ms in all | WAL bytes | query)" >&2
  sql "SELECT calls, round(total_exec_time::numeric, 1), round(mean_exec_time::numeric, 3), round(total_plan_time::numeric, 1), wal_bytes, left(regexp_replace(query, '\s+', ' ', 'g'), 150)
       FROM pg_stat_statements ORDER BY total_exec_time + total_plan_time DESC LIMIT 25" >&2
  sql "SELECT pg_stat_statements_reset()" > /dev/null
  # auto_explain's plans of the statements slower than BENCH_GATEWAY_PROFILE_EXPLAIN_MS (100) in this phase.
  echo "--- plans: $1" >&2
  grep -A14 'duration: .* plan:' "$PG_DIR/log" | cut -c1-200 | head -n "${BENCH_GATEWAY_PROFILE_PLAN_LINES:-60}" >&2 || true
  : > "$PG_DIR/log"
}
# perf_start NAME / perf_stop: with BENCH_GATEWAY_PERF, the whole machine's samples between them.
perf_pid=
perf_start() {
  [[ -n ${BENCH_GATEWAY_PERF:-} ]] || return 0
  mkdir -p "$BENCH_GATEWAY_PERF"
  perf record -a -g -o "$BENCH_GATEWAY_PERF/$1.data" > "$work/perf-$1.out" 2>&1 &
  perf_pid=$!
}
perf_stop() {
  [[ -n $perf_pid ]] || return 0
  kill -INT "$perf_pid"; wait "$perf_pid" || true
  perf_pid=
}
if [[ -n ${BENCH_GATEWAY_PROFILE:-} ]]; then sql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" > /dev/null; fi
# cpu_seconds PID…: user + system CPU seconds these processes used so far.
cpu_seconds() {
  local p t=0
  for p in "$@"; do
    [[ -r /proc/$p/stat ]] && t=$(( t + $(awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$p/stat") ))
  done
  python3 -c "print($t / $(getconf CLK_TCK))"
}
# cpu_ticks: the machine's steal and total CPU ticks so far (/proc/stat's cpu line): the share
# the hypervisor gave to other machines between two calls says whether a row had its cores.
cpu_ticks() { awk '/^cpu / {t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t; exit}' /proc/stat; }
# pg_pids: the PostgreSQL server's processes (the postmaster and its children: backends, WAL writer, …).
pg_pids() {
  local pm
  pm=$(head -1 "$PG_DIR/data/postmaster.pid")
  echo "$pm" $(pgrep -P "$pm")
}
"$bin/push-keys" sender generate --app-id "$APP" > /dev/null
PUSHSEAL_API_KEY=$("$bin/push-gateway" keys create --name bench --scope send,register)
export PUSHSEAL_API_KEY
gw_mock_start ""
start_gateways() { for g in A B; do gw_start "$g" --rate 1000000 --burst 1000000 --threads "$threads" --connections 1; done; }
start_gateways

# Recipients: v1 keysets r0… with tokens, v2 installations d0… registered through the gateway.
"$bin/registry-stress" bulk-load "$PG_CONNINFO" "$work/kek" "$APP" "$recipients" > /dev/null
for ((i = 0; i < recipients; i++)); do
  "$bin/push-keys" token add --app-id "$APP" --recipient "r$i" --environment development "$(openssl rand -hex 32)" > /dev/null
  phone=$work/phones/d$i
  mkdir -p "$phone"
  "$bin/push-keys" keychain init --keychain "$phone/keychain" > /dev/null
  "$bin/push-keys" device generate --keychain "$phone/keychain" --access-group "$TEAM.$APP.shared" --app-group "group.$APP" \
    --app-id "$APP" > "$phone/registration.json"
done
python3 - "$work" "$recipients" "${GW_URLS[0]}" <<'PY'
import json, os, sys, urllib.request
work, r, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
for i in range(r):
    record = json.load(open(f"{work}/phones/d{i}/registration.json"))
    body = json.dumps({"registration": record, "apnsDeviceToken": os.urandom(32).hex(), "apnsEnvironment": "development"}).encode()
    q = urllib.request.Request(f"{url}/v1/devices?recipient=d{i}", data=body, method="POST",
                               headers={"Authorization": "Bearer " + os.environ["PUSHSEAL_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(q) as answer:
        assert answer.status in (200, 201), answer.status
PY

# Inputs: pipeline lines, one 500-item request body per format, single items for the latency run.
python3 - "$work" "$tn" "$recipients" <<'PY'
import json, sys
work, tn, r = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = ("Your order has shipped and is on its way to you. " * 8)[:300]
item = lambda p, i: {"recipient": f"{p}{i % r}", "notification": {"title": f"Order {i}", "body": text}}
for fmt, p in (("v1", "r"), ("v2", "d")):
    with open(f"{work}/lines-{fmt}.jsonl", "w") as f:
        for i in range(tn):
            f.write(json.dumps(item(p, i), separators=(",", ":")) + "\n")
    with open(f"{work}/body-{fmt}.json", "w") as f:
        json.dump({"notifications": [item(p, i) for i in range(500)]}, f, separators=(",", ":"))
    with open(f"{work}/items-{fmt}.jsonl", "w") as f:
        for i in range(r):
            f.write(json.dumps(item(p, i), separators=(",", ":")) + "\n")
PY

# wait_drained: until no row is queued or sending (a deadline of 30 minutes).
wait_drained() {
  local deadline=$(( $(date +%s) + 1800 ))
  # Two EXISTS on the partial indexes (a count over the table was a scan of every row five
  # times a second: PostgreSQL CPU taken from the run being measured).
  while [[ $(sql "SELECT EXISTS (SELECT 1 FROM pushseal_outbox WHERE status = 'queued') OR EXISTS (SELECT 1 FROM pushseal_outbox WHERE status = 'sending')") != f ]]; do
    (( $(date +%s) < deadline )) || gw_fail "the outbox did not drain in 30 minutes"
    sleep 0.2
  done
}
# outcomes: "accepted total statuses…" of the outbox's rows.
outcomes() {
  echo "$(sql "SELECT count(*) FILTER (WHERE status = 'accepted') || ' ' || count(*) FROM pushseal_outbox")" \
    "$(sql "SELECT string_agg(status || ' ' || n, ', ' ORDER BY status) FROM (SELECT status, count(*) AS n FROM pushseal_outbox GROUP BY status) g")"
}
# commits: transactions committed in the database so far (all clients: the gateways' accept and
# worker transactions, the bench's own queries).
commits() { sql "SELECT xact_commit FROM pg_stat_database WHERE datname = 'pushseal'"; }
# The enc_alg of one outbox row's payload (docs/FORMAT.md: the v2 ones name HPKE, base or auth).
row_format() {
  sql "SELECT convert_from(payload, 'UTF8') FROM pushseal_outbox LIMIT 1" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("enc_alg", "?"))'
}

# 1. The generator's ceiling, against its own trivial sink.
declare -A pipe_rate gw_rate pipe_note gw_note fmt_seen
if [[ -z $only ]]; then
python3 "$load" sink > "$work/sink.out" 2> "$work/sink.err" &
sink_pid=$!
gw_wait_line "$work/sink.out" '^listening' "$sink_pid" "the load generator's sink"
sink_url=http://127.0.0.1:$(awk '{print $2}' "$work/sink.out")
python3 "$load" batches --body "$work/body-v2.json" --requests $(( quick ? 200 : 2000 )) --threads "$clients" "$sink_url" > "$work/ceiling.json"
"$rate_gen" --items "$work/items-v2.jsonl" --rate 500 --seconds "$lat_s" --out "$work/sink-rate.tsv" "$sink_url" > "$work/sink-rate.json"
kill "$sink_pid"; wait "$sink_pid" 2>/dev/null || true
sink_pid=
ceiling=$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); r=o["requests"]/o["seconds"]; print(f"{round(r):,} requests/s of 500 items = {round(r*500):,} notifications/s")' "$work/ceiling.json")
sink_lat=$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(f"""p50 {o["p50Ms"]} ms, p99 {o["p99Ms"]} ms to the answer from the due time (from the send time p99 {o["sendP99Ms"]} ms); its own send lag p99 {o["lagP99Ms"]} ms""")' "$work/sink-rate.json")
profile "setup"

# 2. Throughput, v1 and v2, pipeline then gateway.
for fmt in v1 v2; do
  a=$(now)
  "$bin/push-seal" batch --app-id "$APP" --device-tokens --environment development "$work/lines-$fmt.jsonl" 2> "$work/seal-$fmt.err" |
    "$bin/push-send" --p8 "$work/AuthKey.p8" --key-id "$KID" --team-id "$TEAM" --host "127.0.0.1:$MOCK_PORT" --ca-file "$MOCK_CA" \
      > "$work/pipe-$fmt.jsonl" 2> "$work/send-$fmt.err" || true
  b=$(now)
  ok=$(grep -c '"outcome":"accepted"' "$work/pipe-$fmt.jsonl" || true)
  pipe_rate[$fmt]=$(python3 -c "print(round($ok / ($b - $a)))")
  pipe_note[$fmt]="$ok of $tn accepted, $(python3 -c "print(f'{$b - $a:.1f}')") s"

  sql "TRUNCATE pushseal_outbox"
  profile "pipeline $fmt"
  commits_before=$(commits)
  # shellcheck disable=SC2046 # pg_pids: one word per process
  read -r cpu_gw cpu_pg cpu_mock < <(echo "$(cpu_seconds "${GW_PIDS[@]}") $(cpu_seconds $(pg_pids)) $(cpu_seconds "$MOCK_PID")")
  perf_start "gateway-$fmt"
  python3 "$load" batches --body "$work/body-$fmt.json" --requests $((tn / 500)) --threads "$clients" "${GW_URLS[@]}" > "$work/gw-$fmt.json"
  wait_drained
  perf_stop
  # shellcheck disable=SC2046
  cpu_note=$(python3 -c "g, p, m = $(cpu_seconds "${GW_PIDS[@]}") - $cpu_gw, $(cpu_seconds $(pg_pids)) - $cpu_pg, $(cpu_seconds "$MOCK_PID") - $cpu_mock; print(f'CPU: gateways {g:.1f} s, PostgreSQL {p:.1f} s, mock {m:.1f} s, per notification {g / $tn * 1e6:.0f} + {p / $tn * 1e6:.0f} + {m / $tn * 1e6:.0f} µs')")
  profile "gateway $fmt"
  sleep 1  # the statistics reach pg_stat_database within a second
  commit_note="$(python3 -c "print(f'{($(commits) - $commits_before) / ($tn / 500):.0f}')") database commits per request of 500"
  read -r ok _ statuses < <(outcomes)
  start_ms=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["startMs"])' "$work/gw-$fmt.json")
  end_ms=$(sql "SELECT max(finished_at) FROM pushseal_outbox")
  gw_rate[$fmt]=$(python3 -c "print(round($ok / (($end_ms - $start_ms) / 1000)))")
  gw_note[$fmt]="$ok of $tn accepted ($statuses), $commit_note, $cpu_note, $(python3 -c "print(f'{($end_ms - $start_ms) / 1000:.1f}')") s from the first POST to the last outcome; 202s after $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' "$work/gw-$fmt.json") s"
  fmt_seen[$fmt]=$(row_format)
done
fi

# 3. Latency at $lat_rate/s offered (v2), single-notification requests.
sql "TRUNCATE pushseal_outbox"
log_from=()
for g in A B; do log_from+=("$(wc -l < "$work/gateway-$g.log")"); done
# shellcheck disable=SC2046 # pg_pids: one word per process
read -r cpu_gw cpu_pg < <(echo "$(cpu_seconds "${GW_PIDS[@]}") $(cpu_seconds $(pg_pids))")
read -r steal_before ticks_before < <(cpu_ticks)
perf_start latency
"$rate_gen" --items "$work/items-v2.jsonl" --rate "$lat_rate" --seconds "$lat_s" --out "$work/lat.tsv" "${GW_URLS[@]}" > "$work/lat.json"
wait_drained
perf_stop
read -r steal_after ticks_after < <(cpu_ticks)
# shellcheck disable=SC2046
lat_cpu=$(python3 -c "n = $lat_s * $lat_rate; print(f'CPU per request (accept and send): gateways {($(cpu_seconds "${GW_PIDS[@]}") - $cpu_gw) / n * 1e6:.0f} µs, PostgreSQL {($(cpu_seconds $(pg_pids)) - $cpu_pg) / n * 1e6:.0f} µs; CPU time stolen by the hypervisor meanwhile {100 * ($steal_after - $steal_before) / max(1, $ticks_after - $ticks_before):.0f} %')")
profile "latency"
sql "SELECT id, status, finished_at FROM pushseal_outbox" > "$work/lat-rows.txt"
lat=$(python3 - "$work/lat.json" "$work/lat.tsv" "$work/lat-rows.txt" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
rows = {}
for l in open(sys.argv[3]):
    i, status, finished = l.rstrip("\n").split("|")
    rows[i] = (status, int(finished) if finished else None)
after = sorted(rows[i][1] - int(t202) for i, _, t202, _ in (l.split("\t") for l in open(sys.argv[2]))
               if i in rows and rows[i][0] == "accepted" and rows[i][1] is not None)
pct = lambda v, p: v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None
statuses = ", ".join(f"{k} {v}" for k, v in sorted(o["statuses"].items()))
print(f'{o["sent"]} requests ({statuses}) at {o["achievedPerSecond"]}/s achieved|from the due time p50 {o["p50Ms"]} ms, **p99 {o["p99Ms"]} ms**, max {o["maxMs"]} ms; from the send time p50 {o["sendP50Ms"]} ms, p99 {o["sendP99Ms"]} ms (generator send lag p99 {o["lagP99Ms"]} ms)|'
      f'p50 {pct(after, 50)} ms, p99 {pct(after, 99)} ms, max {after[-1] if after else None} ms ({len(after)} accepted)')
PY
)
IFS='|' read -r lat_what lat_202 lat_after <<< "$lat"
# The gateways' own time per request in that run (their "request" log lines: durationMs), to tell
# the server's time from the queue in front of it.
lat_server=$(for k in 0 1; do tail -n +"$((log_from[k] + 1))" "$work/gateway-$([[ $k -eq 0 ]] && echo A || echo B).log"; done | python3 -c '
import json, sys
d = sorted(o["durationMs"] for o in map(json.loads, sys.stdin) if o.get("event") == "request" and o.get("route") == "POST /v1/notifications")
pct = lambda p: round(d[min(len(d) - 1, int(round(p / 100 * (len(d) - 1))))], 2) if d else None
print(f"p50 {pct(50)} ms, p99 {pct(99)} ms ({len(d)} requests)")')

# 4. Peak RSS per instance over N notifications through two fresh instances (v2).
if [[ -z $only ]]; then
gw_stop_gateways
sql "TRUNCATE pushseal_outbox"
start_gateways
a=$(now)
python3 "$load" batches --body "$work/body-v2.json" --requests $((n / 500)) --threads "$clients" "${GW_URLS[@]}" > "$work/big.json"
wait_drained
b=$(now)
rss=()
for p in "${GW_PIDS[@]}"; do rss+=("$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$p/status")"); done
read -r big_ok big_total big_statuses < <(outcomes)
big_s=$(python3 -c "print(round($b - $a))")
fi
gw_stop_gateways
bench_s=$(python3 -c "print(round($(now) - $bench_start))")

ratio() { python3 -c "print(round(100 * $1 / max(1, $2)))"; }
echo "## push-gateway end to end, beside the push-seal batch | push-send pipeline"
echo
echo "Two push-gateway instances ($threads HTTP threads, 1 APNs connection each) on one throwaway PostgreSQL $("$PG_BIN/postgres" --version | grep -oE '[0-9]+(\.[0-9]+)*' | head -1) with fsync and synchronous_commit on (Unix socket; $pg_settings), the native mock APNs, the load generators (Benchmarks/gateway_load.py for the batches: Python threads, http.client keep-alive; Benchmarks/gateway_rate.c for the latency row: C on libcurl, open loop, 64 keep-alive connections) and the pipeline, all on the same $(nproc) cores; load average $load_start at the start, $(loadavg) at the end; $bench_s s in all. $recipients v1 and $recipients v2 recipients, a 300-byte body each. The ratio of one run is the figure to compare: absolute rates depend on what else the cores run$( [[ $quick -eq 1 ]] && echo "; --quick: a check of the script, not the figures")."
echo
echo "| measurement | result |"
echo "|---|---|"
if [[ -z $only ]]; then
echo "| batch load generator ceiling (gateway_load.py against its trivial sink, $clients threads) | $ceiling |"
echo "| open-loop generator at 500 single requests/s (gateway_rate against the Python sink) | $sink_lat |"
for fmt in v1 v2; do
  echo "| $fmt: pipeline (push-seal batch --device-tokens \| push-send; ${pipe_note[$fmt]}) | ${pipe_rate[$fmt]} notifications/s |"
  echo "| $fmt: gateway, POSTs of 500, $clients client threads over 2 instances (payload format ${fmt_seen[$fmt]}; ${gw_note[$fmt]}) | ${gw_rate[$fmt]} notifications/s = **$(ratio "${gw_rate[$fmt]}" "${pipe_rate[$fmt]}") % of the pipeline** |"
done
echo "| published anchors (other software, other machines) | gorush about 5,000/s per instance; apns2 up to 10,000/s |"
fi
echo "| latency: $lat_what, 2 instances, v2 | to the 202: $lat_202 |"
echo "| latency: the gateways' own time per request in that run (their log's durationMs; $lat_cpu) | $lat_server |"
echo "| latency: from the 202 to accepted by the mock (the row's finished_at) | $lat_after |"
[[ -n $only ]] || echo "| peak RSS (VmHWM) per instance, $n notifications through 2 fresh instances ($big_ok of $big_total accepted; $big_statuses) | $(IFS=/; echo "${rss[*]}") MiB; the run took $big_s s |"
echo
echo "Targets (issue 23): the gateway ≥ 50 % of the pipeline in the same run (v1 and v2); p99 to the 202 ≤ 10 ms and p99 from the 202 to accepted ≤ 100 ms at 500/s; peak RSS ≤ 64 MiB per instance over 1,000,000 notifications."
