#!/usr/bin/env bash
# The plaintext schema's compile-fail check (issue 27 step 3).
#
# NotificationMember (Sources/PushSealWire/NotificationMember.swift) is the one list of the
# plaintext's members; every codec switches over it exhaustively, and each such switch carries a
# `// schema-switch: <codec>` comment. This script type-checks PushSealWire twice against the
# modules of a debug build (`swift build --target PushSealWire` first):
#   1. as it is: no error;
#   2. with -D PUSHSEAL_SCHEMA_PROBE, which adds the test-only member `schemaProbe`: every
#      `schema-switch:` line must fail ("switch must be exhaustive"), and there must be at least
#      the seven codecs the issue names (receiving decoder, sending decoder, scanner, encoder,
#      validation, equality, size estimate).
# Exit 0 when both hold; 1 with the missing codecs listed otherwise; 66 without a build.
# Run by `make schema-probe` and by SchemaProbeTests when PUSHSEAL_SCHEMA_PROBE_CHECK=1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
build="${PUSHSEAL_BUILD_DIR:-$root/.build/x86_64-unknown-linux-gnu/debug}"
if [ ! -f "$build/Modules/PushSealJSON.swiftmodule" ] || [ ! -f "$build/CPushSealSIMD.build/module.modulemap" ]; then
    echo "schema-probe: error: no debug build at $build" >&2
    echo "hint: swift build --target PushSealWire" >&2
    exit 66
fi
sources=(Sources/PushSealWire/*.swift)
# typecheck FILE [FLAGS…]: type-checks FILE as the primary file of the module (every file of
# the module is type-checked on its own: errors in one would hide another's).
typecheck() {
    local primary="$1"
    shift
    swiftc -frontend -typecheck -primary-file "$primary" "${sources[@]/#$primary/}" -module-name PushSealWire -parse-as-library \
        -I "$build/Modules" -swift-version 6 \
        -enable-upcoming-feature ExistentialAny -enable-upcoming-feature InternalImportsByDefault \
        -enable-upcoming-feature MemberImportVisibility -package-name schemaprobe \
        -Xcc "-fmodule-map-file=$root/Sources/COpenSSL/module.modulemap" \
        -Xcc "-fmodule-map-file=$root/Sources/CSodium/module.modulemap" \
        -Xcc "-fmodule-map-file=$build/CPushSealSIMD.build/module.modulemap" \
        -Xcc -I -Xcc "$root/Sources/CPushSealSIMD/include" \
        -module-cache-path "${TMPDIR:-/tmp}/pushseal-schema-probe-cache" "$@" 2>&1
}
mapfile -t switched < <(grep -l 'schema-switch:' "${sources[@]}" | grep -v NotificationMember.swift)
plain=""
probed=""
for f in "${switched[@]}"; do
    if ! out="$(typecheck "$f")"; then plain+="$out"$'\n'; fi
    probed+="$(typecheck "$f" -D PUSHSEAL_SCHEMA_PROBE || true)"$'\n'
done
if [ -n "$plain" ]; then
    echo "schema-probe: error: PushSealWire does not type-check without the probe:" >&2
    echo "$plain" | grep -E 'error:' >&2 || true
    exit 1
fi
status=0
count=0
while IFS=: read -r file line rest; do
    codec="${rest#*schema-switch: }"
    count=$((count + 1))
    pattern="$(printf '%s' "$file" | sed 's/[][+.()*?^$|\\]/\\&/g')"
    if echo "$probed" | grep -qE "^($root/)?$pattern:$line:[0-9]+: error: switch must be exhaustive"; then
        echo "ok: $codec ($file:$line) does not compile with a member it does not handle"
    else
        echo "schema-probe: error: $codec ($file:$line) compiles with the probe member: not exhaustive over NotificationMember" >&2
        status=1
    fi
done < <(grep -n '// schema-switch:' "${switched[@]}")
for codec in "receiving decoder" "sending decoder" "scanner" "encoder" "validation" "equality" "size estimate"; do
    if ! grep -q "schema-switch: $codec\$" "${sources[@]}"; then
        echo "schema-probe: error: no switch is marked 'schema-switch: $codec'" >&2
        status=1
    fi
done
others="$(echo "$probed" | grep -E ': error: ' | grep -v 'switch must be exhaustive' || true)"
if [ -n "$others" ]; then
    echo "schema-probe: error: the probe build fails for another reason too:" >&2
    echo "$others" >&2
    status=1
fi
[ $status -eq 0 ] && echo "schema-probe: all $count schema switches refuse the probe member"
exit $status
