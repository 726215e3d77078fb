#!/bin/sh
# Builds the libFuzzer target Fuzz/receive-fuzz and runs it for SECONDS (default 600).
# Usage: scripts/fuzz.sh [SECONDS]        (make fuzz FUZZ_SECONDS=…)
# Corpus: Fuzz/corpus (in the repo, read-only here) plus ../shared/cases when present
# (PUSHSEAL_SHARED overrides); new inputs go to Fuzz/.build/corpus, crashes to Fuzz/.build/crashes.
# Exit status: 0 when no invariant broke, libFuzzer's non-zero status otherwise.
set -eu
seconds=${1:-600}
case $seconds in ''|*[!0-9]*) echo "fuzz.sh: error: SECONDS must be a whole number, got '$seconds'" >&2; exit 64;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/Fuzz"
flags="-c release -Xswiftc -sanitize=fuzzer -Xlinker --allow-multiple-definition"
# shellcheck disable=SC2086
swift build $flags
# shellcheck disable=SC2086
bin="$(swift build $flags --show-bin-path)/receive-fuzz"
shared=${PUSHSEAL_SHARED:-$root/../shared}
mkdir -p .build/corpus .build/crashes
set -- .build/corpus corpus
for dir in "$shared/cases/notifications" "$shared/cases/failures"; do
    if [ -d "$dir" ]; then set -- "$@" "$dir"; else echo "fuzz.sh: note: $dir is absent; fuzzing from Fuzz/corpus only" >&2; fi
done
exec "$bin" -max_total_time="$seconds" -dict="$root/Fuzz/receive.dict" -print_final_stats=1 -artifact_prefix=.build/crashes/ -max_len=8192 "$@"
