#!/usr/bin/env bash
# Builds the native mock APNs (Tests/MockAPNs/native, C on libnghttp2 + OpenSSL 3) into
# .build/mock-apns-native with the system C compiler, when a source is newer than the binary.
# Not a SwiftPM product: a mock never ships with the release tools. Used by `make test`,
# `make bench` (scripts/bench-apns.sh) and the differential test (MockDifferentialTests).
# Prints the binary's path on stdout.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$root/Tests/MockAPNs/native
out=$root/.build/mock-apns-native
cc=${CC:-cc}
stale=0
[[ -x $out ]] || stale=1
for f in "$src"/*.c "$src"/*.h "${BASH_SOURCE[0]}"; do [[ $f -nt $out ]] && stale=1; done
if [[ $stale == 1 ]]; then
  command -v "$cc" >/dev/null || { echo "build-mock-apns: error: no C compiler ($cc)" >&2; echo "hint: scripts/install-deps.sh" >&2; exit 69; }
  mkdir -p "$root/.build"
  # shellcheck disable=SC2046 # pkg-config's flags, word-split on purpose
  "$cc" -std=c11 -O2 -Wall -Wextra -Werror -o "$out.tmp.$$" "$src"/*.c \
    $(pkg-config --cflags --libs libnghttp2 libssl libcrypto) -lm
  mv -f "$out.tmp.$$" "$out"
fi
echo "$out"
