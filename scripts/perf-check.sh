#!/usr/bin/env bash
# make perf-check: the hot paths' cost in instructions (callgrind), held to committed thresholds.
#
# Instruction counts, unlike seconds, do not move with the load of a shared machine: the same
# binary on the same input gives the same count (the in-process jobs to the instruction; the
# multi-threaded and networked ones within a fraction of a per cent). Each figure is the
# difference of two runs that differ only in how many times the job is done, divided by that
# difference, so start-up and set-up cancel out:
#   fullseal-256, fullseal-1024   push-bench probe fullseal: notification JSON in, APNs payload out
#   fullopen-256, fullopen-1024   push-bench probe fullopen: APNs payload in, notification out
#   batch-line-1024               push-seal batch --jobs 1 with a server keychain, one 1 KB line (one sealing thread: a count that does not depend on the core count or on how the workers' waits interleave)
#   send-notification             push-send, one 1 KB notification to the native mock APNs (every
#                                 thread of push-send; the mock runs outside callgrind)
# The core seal (AES-256-GCM of the same bytes) is counted too and printed beside the full seal,
# for the ratio README's Benchmark section reports; it has no threshold of its own.
#
# Thresholds: Benchmarks/perf-thresholds.txt, one `name instructions` a line. A figure more than
# 3 % above its threshold fails (a regression); one more than 3 % below it also fails (the
# threshold is stale or was raised by hand: lower it, so the guard stays tight). After a change
# that moves a figure on purpose, `scripts/perf-check.sh --update` rewrites the file; commit it
# with the reason in the message.
#
# Usage: scripts/perf-check.sh [--update] [--bin DIR] [--thresholds FILE]
#        scripts/perf-check.sh --figures FILE [--thresholds FILE]
#   --bin DIR          the release build (default .build/release)
#   --thresholds FILE  default Benchmarks/perf-thresholds.txt
#   --figures FILE     compare figures measured earlier (`name instructions` lines, as the check
#                      prints them to .build/perf-figures.txt) instead of measuring: the
#                      comparison alone, for its own test (Tests/CLITests/PerfCheckTests.swift)
# Exit: 0 within bounds, 1 a figure out of bounds, 64 usage, 66 a tool or binary missing, 70 a run failed.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
update=
figures=
thresholds=$root/Benchmarks/perf-thresholds.txt
usage_hint="hint: scripts/perf-check.sh [--update] [--bin DIR] [--thresholds FILE] | --figures FILE [--thresholds FILE]"
while [[ $# -gt 0 ]]; do
  case $1 in
    --update) update=1; shift ;;
    --bin|--thresholds|--figures)
      [[ $# -ge 2 ]] || { echo "perf-check: error: $1 needs a value" >&2; echo "$usage_hint" >&2; exit 64; }
      case $1 in --bin) bin=$2 ;; --thresholds) thresholds=$2 ;; --figures) figures=$2 ;; esac
      shift 2 ;;
    *) echo "perf-check: error: unknown argument '$1'" >&2; echo "$usage_hint" >&2; exit 64 ;;
  esac
done
[[ -n $figures && -n $update ]] && { echo "perf-check: error: --update measures; it cannot take --figures" >&2; echo "$usage_hint" >&2; exit 64; }
[[ -f $thresholds || -n $update ]] || { echo "perf-check: error: no thresholds file at $thresholds" >&2; echo "hint: scripts/perf-check.sh --update" >&2; exit 66; }
tolerance_percent=3
names=(fullseal-256 fullseal-1024 fullopen-256 fullopen-1024 batch-line-1024 send-notification)
declare -A figure total

# compare: prints each figure beside its threshold; exits 1 when one is out of bounds.
compare() {
  declare -A limit
  local name value bound change verdict failed=0
  while read -r name value; do
    [[ -z $name || $name == \#* ]] && continue
    limit[$name]=$value
  done < "$thresholds"
  printf '%-20s %12s %12s %8s  %s\n' figure instructions threshold change verdict
  for name in "${names[@]}"; do
    value=${figure[$name]:-}
    bound=${limit[$name]:-}
    if [[ -z $value || -z $bound ]]; then
      printf '%-20s %12s %12s %8s  %s\n' "$name" "${value:--}" "${bound:--}" - "missing (scripts/perf-check.sh --update)"
      failed=1
      continue
    fi
    read -r change verdict < <(python3 -c "
import sys
v, b, t = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
c = (v - b) * 100.0 / b
print('%+.1f%%' % c, 'ok' if abs(c) <= t else ('REGRESSION' if c > 0 else 'STALE-THRESHOLD'))" "$value" "$bound" "$tolerance_percent")
    printf '%-20s %12s %12s %8s  %s\n' "$name" "$value" "$bound" "$change" "$verdict"
    [[ $verdict == ok ]] || failed=1
  done
  if [[ $failed -ne 0 ]]; then
    echo "perf-check: error: a figure is missing or more than $tolerance_percent % away from its threshold in $thresholds" >&2
    echo "hint: a regression: find it (callgrind --toggle-collect); a deliberate change: scripts/perf-check.sh --update and say why in the commit" >&2
    exit 1
  fi
  echo "perf-check: every figure within $tolerance_percent % of its threshold"
}

if [[ -n $figures ]]; then
  [[ -f $figures ]] || { echo "perf-check: error: no figures file at $figures" >&2; echo "$usage_hint" >&2; exit 66; }
  while read -r name value; do
    [[ -z $name || $name == \#* ]] && continue
    figure[$name]=$value
  done < "$figures"
  compare
  exit 0
fi
for t in valgrind python3 openssl strip; do
  command -v "$t" >/dev/null || { echo "perf-check: error: $t is missing" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 66; }
done
for tool in push-bench push-seal push-keys push-send; do
  [[ -x $bin/$tool ]] || { echo "perf-check: error: $bin/$tool is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
done
native=$("$root/scripts/build-mock-apns.sh") || { echo "perf-check: error: the native mock APNs could not be built" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 70; }

work=$(mktemp -d "${TMPDIR:-/tmp}/perf-check.XXXXXX")
mock_pid=
stop_mock() {
  if [[ -n $mock_pid ]]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
  mock_pid=
}
cleanup() { stop_mock; rm -rf "$work"; }
trap cleanup EXIT

# valgrind cannot read the DWARF of Swift's release binaries ("possibly corrupted debuginfo"):
# it counts copies without debug sections, which run the same instructions.
for tool in push-bench push-seal push-send; do strip --strip-debug -o "$work/$tool" "$bin/$tool"; done

# count OUT COMMAND...: runs COMMAND under callgrind (all threads, children not traced) and
# prints its instruction total.
count() {
  local out=$1; shift
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$@" > "$out" 2> "$work/cg.err" \
    || { echo "perf-check: error: '$*' failed under callgrind:" >&2; tail -n 5 "$work/cg.err" >&2; exit 70; }
  awk '/^summary:/ {print $2}' "$work/cg.out"
}
# per_op N1 N2 TOTAL1 TOTAL2: instructions per operation.
per_op() { python3 -c "import sys; n1,n2,a,b=map(int,sys.argv[1:]); print(round((b-a)/(n2-n1)))" "$@"; }

# 1. In process: seal and open.
for size in 256 1024; do
  for job in fullseal coreseal fullopen; do
    a=$(count /dev/null "$work/push-bench" probe "$job" "$size" 200)
    b=$(count /dev/null "$work/push-bench" probe "$job" "$size" 1200)
    figure[$job-$size]=$(per_op 200 1200 "$a" "$b")
  done
done

# 2. push-seal batch with a real server keychain (made by push-keys), 1 KB lines; 4,096 and
# 12,288 lines (whole chunks of 2,048, so the once-per-chunk keyset check is in the figure).
kc=$work/server-kc
"$bin/push-keys" generate --keychain "$kc" --app-id com.example.app --recipient alice > /dev/null
python3 - "$work" <<'PY'
import sys
work = sys.argv[1]
body = "x" * (1024 - len('{"title":"Dinner plans","body":"","id":"bench-1"}'))
line = '{"recipient":"alice","notification":{"title":"Dinner plans","body":"%s","id":"bench-1"}}\n' % body
for n in (4096, 12288):
    with open("%s/batch-%d.jsonl" % (work, n), "w") as f:
        f.write(line * n)
PY
for n in 4096 12288; do
  total[$n]=$(count "$work/batch-$n.out" "$work/push-seal" batch --jobs 1 --app-id com.example.app --keychain "$kc" "$work/batch-$n.jsonl")
  [[ $(grep -c '"payload"' "$work/batch-$n.out") -eq $n ]] || { echo "perf-check: error: push-seal batch did not seal every line" >&2; exit 70; }
done
figure[batch-line-1024]=$(per_op 4096 12288 "${total[4096]}" "${total[12288]}")

# 3. push-send to the native mock: 1,000 and 5,000 lines of push-seal batch's shape, one
# connection, distinct tokens.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey.p8" 2>/dev/null
chmod 600 "$work/AuthKey.p8"
printf '{"keys":[{"keyId":"ABC123DEFG","teamId":"TEAM123456","p8":"%s"}],"topics":["com.example.app"]}\n' "$work/AuthKey.p8" > "$work/mock.json"
python3 - "$work" <<'PY'
import base64, json, os, sys
work = sys.argv[1]
headers = {"apns-push-type": "alert", "apns-topic": "com.example.app", "apns-priority": "10", "apns-expiration": "0"}
payload = {"aps": {"alert": {"title": "New message", "body": "Open the app to read it"}, "mutable-content": 1},
           "encrypted_data": base64.b64encode(bytes(range(256)) * 2 + bytes(148)).decode()}
for n in (1000, 5000):
    with open("%s/send-%d.jsonl" % (work, n), "w") as f:
        for i in range(1, n + 1):
            line = {"line": i, "payload": payload, "headers": headers, "deviceToken": "%064x" % (0x5EA1 << 200 | i)}
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
PY
for n in 1000 5000; do
  rm -f "$work/mock.out"
  "$native" --config "$work/mock.json" --detached < /dev/null > "$work/mock.out" 2> "$work/mock.err" &
  mock_pid=$!
  while ! grep -q '^listening' "$work/mock.out" 2>/dev/null; do
    kill -0 "$mock_pid" 2>/dev/null || { echo "perf-check: error: the mock did not start: $(cat "$work/mock.err")" >&2; exit 70; }
    sleep 0.05
  done
  read -r _ port ca < "$work/mock.out"
  total[$n]=$(count "$work/send-$n.out" "$work/push-send" --p8 "$work/AuthKey.p8" --key-id ABC123DEFG --team-id TEAM123456 \
    --host "127.0.0.1:$port" --ca-file "$ca" --connections 1 --in-flight 1000 "$work/send-$n.jsonl")
  stop_mock
  [[ $(grep -c '"outcome":"accepted"' "$work/send-$n.out") -eq $n ]] || { echo "perf-check: error: the mock did not accept every notification" >&2; exit 70; }
done
figure[send-notification]=$(per_op 1000 5000 "${total[1000]}" "${total[5000]}")

mkdir -p "$root/.build"
for name in "${names[@]}"; do echo "$name ${figure[$name]}"; done > "$root/.build/perf-figures.txt"
if [[ -n $update ]]; then
  {
    echo "# make perf-check thresholds: instructions per operation (callgrind), scripts/perf-check.sh --update"
    echo "# A figure more than $tolerance_percent % above or below its threshold fails the check."
    cat "$root/.build/perf-figures.txt"
  } > "$thresholds"
  echo "perf-check: wrote $thresholds"
fi
for size in 256 1024; do
  echo "full seal / core seal at $size B: $(python3 -c "print(round(${figure[fullseal-$size]} / ${figure[coreseal-$size]}, 2))") (instructions: ${figure[fullseal-$size]} / ${figure[coreseal-$size]})"
done
compare
