#!/usr/bin/env bash
# The APNs part of `make bench`: push-send against the mock APNs over TLS on loopback, client and
# mock on the same cores. Prints a Markdown section on stdout. Two mocks (Tests/MockAPNs): the
# native one (C on libnghttp2, built by scripts/build-mock-apns.sh) for the throughput rows, since
# Node's http2 costs ~90 µs of CPU per request and would be the ceiling; the Node one for the fault
# script (the native mock has none) and for its own ceiling row, to show why.
#
# Usage: scripts/bench-apns.sh [--quick] [--bin DIR]
#   --quick   10,000 notifications and a 100,000-line streamed run (a check, not the figures)
#   --bin DIR where push-send is built (default: .build/release)
# Measures: each mock's own ceiling (h2load, one connection, 1000 streams); push-send on one
# connection with 1000 in flight, 1 KB payloads, distinct tokens (notifications/s, client CPU µs
# per notification, p50/p99 latency); aioapns (PyPI, its endpoint patched to the mock) on the
# same payloads; peak RSS of a streamed run of 1,000,000 lines; and the fault script (stream
# limit 1000 → 1 → 1000, one GOAWAY, 1% 500s, 0.5% 410s): one final outcome per line, none
# accepted twice (checked against the mock's record).
set -euo pipefail
[[ -n ${BENCH_APNS_TRACE:-} ]] && set -x
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$root/.build/release
count=100000
stream=1000000
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) count=10000; stream=100000; shift ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--quick] [--bin DIR]" >&2; exit 64 ;;
  esac
done
for t in node h2load python3 /usr/bin/time openssl; do
  command -v "$t" >/dev/null || { echo "bench-apns: error: $t is missing" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 69; }
done
[[ -x $bin/push-send ]] || { echo "bench-apns: error: $bin/push-send is not built" >&2; echo "hint: swift build -c release" >&2; exit 66; }
native=$("$root/scripts/build-mock-apns.sh") || { echo "bench-apns: error: the native mock APNs could not be built" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 70; }

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-apns.XXXXXX")
mock_pid=
cleanup() { stop_mock; [[ -n ${BENCH_APNS_KEEP:-} ]] && echo "bench-apns: kept $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey.p8" 2>/dev/null
KID=ABC123DEFG TEAM=TEAM123456 TOPIC=com.example.app

# stop_mock: stops the running mock (SIGTERM: it writes its record and exits) and waits for it.
stop_mock() {
  if [[ -n $mock_pid ]]; then
    kill "$mock_pid" 2>/dev/null || true
    wait "$mock_pid" 2>/dev/null || true
  fi
  mock_pid=
}
# start_mock native|node CONFIG: starts that mock, sets mock_pid, PORT and CA.
start_mock() {
  stop_mock
  rm -f "$work/mock.out"
  local cmd=("$native")
  [[ $1 == node ]] && cmd=(node "$root/Tests/MockAPNs/mock-apns.mjs")
  "${cmd[@]}" --config "$2" --detached < /dev/null > "$work/mock.out" 2> "$work/mock.err" &
  mock_pid=$!
  while ! grep -q '^listening' "$work/mock.out" 2>/dev/null; do
    kill -0 "$mock_pid" 2>/dev/null || { echo "bench-apns: error: the mock did not start: $(cat "$work/mock.err")" >&2; exit 70; }
    sleep 0.05
  done
  read -r _ PORT CA < "$work/mock.out"
}
config() { # config RECORD FAULTS_JSON
  printf '{"keys":[{"keyId":"%s","teamId":"%s","p8":"%s"}],"topics":["%s"]%s%s}\n' "$KID" "$TEAM" "$work/AuthKey.p8" "$TOPIC" \
    "${1:+,\"record\":\"$1\"}" "${2:+,\"faults\":$2}"
}

# Inputs: COUNT lines of push-seal batch's shape with a 1 KB sealed-looking payload and a distinct token.
python3 - "$work" "$count" "$TOPIC" <<'PY'
import base64, json, os, sys
work, n, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3]
headers = {"apns-push-type": "alert", "apns-topic": topic, "apns-priority": "10", "apns-expiration": "0"}
with open(os.path.join(work, "in.jsonl"), "w") as f, open(os.path.join(work, "body.json"), "w") as b:
    for i in range(1, n + 1):
        payload = {"aps": {"alert": {"title": "New message", "body": "Open the app to read it"}, "mutable-content": 1},
                   "encrypted_data": base64.b64encode(os.urandom(660)).decode()}
        line = {"line": i, "payload": payload, "headers": headers, "deviceToken": "%064x" % (0x5EA1 << 200 | i)}
        f.write(json.dumps(line, separators=(",", ":")) + "\n")
        if i == 1: b.write(json.dumps(payload, separators=(",", ":")))
PY
bytes=$(wc -c < "$work/body.json")
jwt=$(python3 - "$work/AuthKey.p8" "$KID" "$TEAM" <<'PY'
import base64, json, sys, time
from cryptography.hazmat.primitives import serialization, hashes
from cryptography.hazmat.primitives.asymmetric import ec, utils
k = serialization.load_pem_private_key(open(sys.argv[1], 'rb').read(), None)
b = lambda x: base64.urlsafe_b64encode(x).rstrip(b'=').decode()
h = b(json.dumps({"alg": "ES256", "kid": sys.argv[2]}).encode()); c = b(json.dumps({"iss": sys.argv[3], "iat": int(time.time())}).encode())
r, s = utils.decode_dss_signature(k.sign((h + '.' + c).encode(), ec.ECDSA(hashes.SHA256())))
print(h + '.' + c + '.' + b(r.to_bytes(32, 'big') + s.to_bytes(32, 'big')))
PY
)

echo "## APNs client (push-send) against the mock APNs"
echo
echo "TLS 1.3 over loopback, client and mock on the same $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg) at the start); payload $bytes bytes; $count distinct device tokens; one connection, 1000 streams. Mock: native = Tests/MockAPNs/native (C, libnghttp2), Node = Tests/MockAPNs/mock-apns.mjs (the fault script's)."
echo

# 1. Each mock's ceiling. h2load sends its 1000 streams at once without waiting for the limit
# to rise after the first valid token, so this run's mock allows 1000 from the start; the mock's
# CPU time per request (user+sys from /proc/PID/stat around the h2load run: start-up and its
# certificate making not included) says what it takes from the cores.
config "" "" > "$work/plain.json"
sed 's/}$/,"initialStreams":1000}/' "$work/plain.json" > "$work/ceiling.json"
ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "| measurement | mock | result |"
echo "|---|---|---|"
for kind in native node; do
  start_mock "$kind" "$work/ceiling.json"
  before=$(cpu_ticks "$mock_pid")
  h2=$(/usr/bin/time -f "T %e %U %S %M" -o "$work/time.h2load" h2load -n "$count" -c 1 -m 1000 -d "$work/body.json" \
    -H "authorization: bearer $jwt" -H "apns-topic: $TOPIC" -H "apns-push-type: alert" "https://127.0.0.1:$PORT/3/device/00aa11bb" 2>&1 || true)
  after=$(cpu_ticks "$mock_pid")
  h2load_cpu=$(awk -v n="$count" '/^T /{printf "%.1f", ($3 + $4) * 1e6 / n}' "$work/time.h2load")
  mock_rps=$(awk '/^finished in/{gsub(",","",$4); print $4}' <<< "$h2")
  h2ok=$(awk '/^status codes:/{print $3}' <<< "$h2")
  stop_mock
  mock_cpu=$(python3 -c "print(round(($after - $before) * 1e6 / $ticks / $count, 1))")
  echo "| mock ceiling (h2load -c 1 -m 1000, $h2ok × 2xx of $count) | ${kind/node/Node} | ${mock_rps%.*} requests/s, mock CPU $mock_cpu µs/request (h2load's own: $h2load_cpu µs/request) |"
done

# 2. push-send, one connection, 1000 in flight.
start_mock native "$work/plain.json"
/usr/bin/time -f "T %e %U %S %M" -o "$work/time.send" "$bin/push-send" --p8 "$work/AuthKey.p8" --key-id "$KID" --team-id "$TEAM" \
  --host "127.0.0.1:$PORT" --ca-file "$CA" --connections 1 --in-flight 1000 "$work/in.jsonl" > "$work/out.jsonl" 2> "$work/send.err" || true
read -r _ wall user sys rss < <(grep "^T " "$work/time.send")
accepted=$(grep -c '"outcome":"accepted"' "$work/out.jsonl" || true)
send_rate=$(python3 -c "print(round($count / $wall))")
cpu_us=$(python3 -c "print(round(($user + $sys) * 1e6 / $count, 1))")
lat=$(grep -o 'p50 [0-9.]* ms, p99 [0-9.]* ms' "$work/send.err" || echo "p50 - ms, p99 - ms")
conns=$(grep -o '[0-9]* connections opened' "$work/send.err" || echo "? connections opened")
echo "| push-send ($accepted of $count accepted, $conns) | native | $send_rate notifications/s |"
echo "| push-send client CPU | native | $cpu_us µs/notification (user+sys), peak RSS $(python3 -c "print(round($rss / 1024, 1))") MiB |"
echo "| push-send latency (queued → outcome, 1000 in flight) | native | $lat |"
# With 1000 always in flight latency is about 1000 / throughput: p99 "at that rate" is measured at an offered rate.
start_mock native "$work/plain.json"
/usr/bin/time -f "T %e" -o "$work/time.rate" "$bin/push-send" --p8 "$work/AuthKey.p8" --key-id "$KID" --team-id "$TEAM" --host "127.0.0.1:$PORT" \
  --ca-file "$CA" --connections 1 --in-flight 1000 --rate 20000 "$work/in.jsonl" > /dev/null 2> "$work/rate.err" || true
rlat=$(grep -o 'p50 [0-9.]* ms, p99 [0-9.]* ms' "$work/rate.err" || echo "p50 - ms, p99 - ms")
echo "| push-send latency at 20,000/s offered (--rate 20000) | native | $rlat, achieved $(awk -v n="$count" '/^T /{printf "%d", n / $2}' "$work/time.rate") notifications/s |"

# 3. aioapns on the same payloads, same mock, one connection, 1000 concurrent sends.
start_mock native "$work/plain.json"
aio=$(python3 - "$work" "$PORT" "$CA" "$KID" "$TEAM" "$TOPIC" <<'PY' 2>&1 || true
import asyncio, json, ssl, sys, time
from aioapns import APNs, NotificationRequest
import aioapns.connection as conn
work, port, ca, kid, team, topic = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
conn.APNsProductionClientProtocol.APNS_SERVER = "127.0.0.1"   # the endpoint patched to the mock
conn.APNsTLSClientProtocol.APNS_PORT = port
conn.APNsProductionClientProtocol.APNS_PORT = port
# At most 10,000 lines: aioapns follows the mock's first limit of one stream for the whole run
# (about 100 notifications/s here), so its rate is measured on a part of the input.
lines = [json.loads(l) for l in open(work + "/in.jsonl")][:10000]
async def main():
    ctx = ssl.create_default_context(cafile=ca)
    ctx.set_alpn_protocols(["h2"])  # the mock, like APNs, speaks only h2
    apns = APNs(key=open(work + "/AuthKey.p8").read(), key_id=kid, team_id=team, topic=topic, use_sandbox=False,
                max_connections=1, ssl_context=ctx)
    sem = asyncio.Semaphore(1000)
    ok = 0
    async def one(l):
        nonlocal ok
        async with sem:
            r = await apns.send_notification(NotificationRequest(device_token=l["deviceToken"], message=l["payload"]))
            ok += r.is_successful
    t = time.monotonic()
    await asyncio.gather(*(one(l) for l in lines))
    dt = time.monotonic() - t
    print(f"{round(len(lines) / dt)} {ok}")
asyncio.run(main())
PY
)
read -r aio_rate aio_ok <<< "$(tail -1 <<< "$aio")"
if [[ $aio_rate =~ ^[0-9]+$ ]]; then
  echo "| aioapns ($aio_ok of $(( count < 10000 ? count : 10000 )) accepted) | native | $aio_rate notifications/s (push-send: $(python3 -c "print(round($send_rate / $aio_rate, 1))")×) |"
else
  echo "| aioapns | native | did not run: $(tail -1 <<< "$aio") |"
fi

# 4. A streamed run of STREAM lines (the input file over and over, without "line": input line numbers).
start_mock native "$work/plain.json"
sed 's/^{"line":[0-9]*,/{/' "$work/in.jsonl" > "$work/in-noline.jsonl"
reps=$(( (stream + count - 1) / count ))
for _ in $(seq "$reps"); do cat "$work/in-noline.jsonl"; done | head -n "$stream" | \
  /usr/bin/time -f "T %e %U %S %M" -o "$work/time.stream" "$bin/push-send" --p8 "$work/AuthKey.p8" --key-id "$KID" --team-id "$TEAM" \
  --host "127.0.0.1:$PORT" --ca-file "$CA" - > /dev/null 2> "$work/stream.err" || true
read -r _ swall suser ssys srss < <(grep "^T " "$work/time.stream")
echo "| streamed run, $stream lines ($(grep -o '[0-9]* accepted' "$work/stream.err" | head -1)) | native | $(python3 -c "print(round($stream / $swall))") notifications/s, client CPU $(python3 -c "print(round(($suser + $ssys) * 1e6 / $stream, 1))") µs/notification, peak RSS $(python3 -c "print(round($srss / 1024, 1))") MiB |"

# 5. The fault script, with the mock's record: one outcome per line, none accepted twice.
config "$work/record.jsonl" '{"seed":3,"rate500":0.01,"rate410":0.005,"goawayAfter":'$((count / 2))',"goawayReason":"Shutdown","streamLimits":[['$((count / 4))',1],['$((count / 4 + 200))',1000]]}' > "$work/faults.json"
start_mock node "$work/faults.json"
"$bin/push-send" --p8 "$work/AuthKey.p8" --key-id "$KID" --team-id "$TEAM" --host "127.0.0.1:$PORT" --ca-file "$CA" --retry-delay 50 \
  "$work/in.jsonl" > "$work/fault-out.jsonl" 2> "$work/fault.err" || true
stop_mock
check=$(python3 - "$work" "$count" <<'PY'
import json, sys, collections
work, n = sys.argv[1], int(sys.argv[2])
outs = [json.loads(l) for l in open(work + "/fault-out.jsonl")]
per_line = collections.Counter(o["line"] for o in outs)
kinds = collections.Counter(o["outcome"] for o in outs)
rec = [json.loads(l) for l in open(work + "/record.jsonl")]
acc = collections.Counter(r["token"] for r in rec if r.get("status") == 200)
twice = sum(1 for v in acc.values() if v > 1)
# Accepted twice while the outcome says one attempt: a resend the client did not know about.
attempts = {o["deviceToken"]: o.get("attempts", 0) for o in outs}
silent = sum(1 for t, v in acc.items() if v > 1 and attempts.get(t, 0) <= 1)
dups = [t for t, v in acc.items() if v > 1][:3]
for t in dups:
    sys.stderr.write("accepted twice: %s\n  outcome: %s\n  mock: %s\n" % (t, [o for o in outs if o["deviceToken"] == t],
                     [r for r in rec if r.get("token") == t]))
one_each = len(per_line) == n and all(v == 1 for v in per_line.values())
print(f"{'yes' if one_each else 'NO'} {twice} {silent} " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + f"; {len(rec)} streams seen by the mock")
PY
)
read -r one twice silent rest <<< "$check"
echo "| fault script ($rest) | Node | one final outcome per line: $one; accepted twice: $twice, of them with attempts 1 (unknown to the client): $silent |"
echo
echo "Targets (issue 14): ≥ 20,000 notifications/s, ≥ 2× aioapns, p99 ≤ 50 ms, peak RSS ≤ 64 MiB for 1,000,000 lines."
