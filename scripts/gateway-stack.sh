#!/usr/bin/env bash
# The push-gateway stack on this machine, for scripts (make demo-gateway, make bench-gateway):
# a throwaway PostgreSQL (scripts/pg-throwaway.sh) with a KEK and the schema, the native mock APNs
# (Tests/MockAPNs/native) with a throwaway provider key, and push-gateway serve instances on the
# one database. Source it after setting:
#   root  the repository, bin  where push-gateway and push-keys are built, work  a 0700 directory,
#   and the identity APP, TEAM, KID (bundle id, team id, key id).
# Then:
#   gw_db_start                 PostgreSQL, KEK ($work/kek), push-gateway migrate (its output on
#                               stdout); exports PUSHSEAL_REGISTRY and PUSHSEAL_KEK_FILE
#                               (PG_THROWAWAY_FSYNC=on before it keeps fsync on). Not in a
#                               pipeline: it sets variables of this shell
#   gw_mock_start [RECORD]      $work/AuthKey.p8, $work/mock.json and the native mock: sets
#                               MOCK_PID, MOCK_PORT, MOCK_CA (RECORD: its record file, optional)
#   gw_start NAME [OPTION…]     one `push-gateway serve` on 127.0.0.1, port 0, sending to the mock
#                               (logs $work/gateway-NAME.log): appends to GW_PIDS and GW_URLS
#   gw_stop_gateways            SIGTERM to every gateway (they drain), waits; fails when one does
#                               not exit 0; empties GW_PIDS and GW_URLS
#   gw_stack_stop               everything still running (gateways, mock), then PostgreSQL; safe
#                               to call twice (an EXIT trap)
#   gw_wait_line FILE PATTERN PID WHAT   waits until FILE has a line matching PATTERN (exits the
#                               script with an error when PID exits first)
# Errors go to stderr prefixed by $GW_TOOL (default "gateway-stack").
# shellcheck disable=SC2154  # root, bin, work: set by the script that sources this one
# shellcheck source=scripts/pg-throwaway.sh disable=SC1091
source "$root/scripts/pg-throwaway.sh"
GW_PIDS=()
GW_URLS=()
MOCK_PID=

gw_fail() { echo "${GW_TOOL:-gateway-stack}: error: $*" >&2; exit 1; }

gw_wait_line() {
  while ! grep -q "$2" "$1" 2>/dev/null; do
    kill -0 "$3" 2>/dev/null || gw_fail "$4 did not start: $(tail -3 "$1" "${1%.*}.err" 2>/dev/null)"
    sleep 0.05
  done
}

gw_db_start() {
  pg_throwaway_start
  "$bin/push-keys" registry new-kek --out "$work/kek"
  export PUSHSEAL_REGISTRY=$PG_CONNINFO PUSHSEAL_KEK_FILE=$work/kek
  "$bin/push-gateway" migrate
}

gw_mock_start() {
  local native
  native=$("$root/scripts/build-mock-apns.sh") || {
    echo "${GW_TOOL:-gateway-stack}: error: the native mock APNs could not be built" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 70
  }
  [[ -e $work/AuthKey.p8 ]] || openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/AuthKey.p8" 2>/dev/null
  chmod 600 "$work/AuthKey.p8"
  printf '{"keys":[{"keyId":"%s","teamId":"%s","p8":"%s"}],"topics":["%s"]%s}\n' \
    "$KID" "$TEAM" "$work/AuthKey.p8" "$APP" "${1:+,\"record\":\"$1\"}" > "$work/mock.json"
  rm -f "$work/mock.out"
  "$native" --config "$work/mock.json" --detached < /dev/null > "$work/mock.out" 2> "$work/mock.err" &
  MOCK_PID=$!
  gw_wait_line "$work/mock.out" '^listening' "$MOCK_PID" "the mock APNs"
  read -r _ MOCK_PORT MOCK_CA < "$work/mock.out"
}

gw_start() {
  local name=$1 pid port
  shift
  "$bin/push-gateway" serve --app-id "$APP" --listen 127.0.0.1:0 --environment development \
    --p8 "$work/AuthKey.p8" --key-id "$KID" --team-id "$TEAM" --host "127.0.0.1:$MOCK_PORT" --ca-file "$MOCK_CA" "$@" \
    < /dev/null > "$work/gateway-$name.out" 2> "$work/gateway-$name.log" &
  pid=$!
  GW_PIDS+=("$pid")
  gw_wait_line "$work/gateway-$name.log" '"event":"listening"' "$pid" "gateway $name"
  port=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("event") == "listening": print(o["port"]); break' "$work/gateway-$name.log")
  GW_URLS+=("http://127.0.0.1:$port")
}

gw_stop_gateways() {
  local p ok=0
  for p in "${GW_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${GW_PIDS[@]}"; do wait "$p" || ok=1; done
  GW_PIDS=()
  GW_URLS=()
  [[ $ok -eq 0 ]] || gw_fail "a gateway did not exit 0 on SIGTERM"
}

gw_stack_stop() {
  local p
  for p in "${GW_PIDS[@]}" $MOCK_PID; do kill "$p" 2>/dev/null || true; done
  for p in "${GW_PIDS[@]}" $MOCK_PID; do wait "$p" 2>/dev/null || true; done
  GW_PIDS=()
  GW_URLS=()
  MOCK_PID=
  pg_throwaway_stop
}
