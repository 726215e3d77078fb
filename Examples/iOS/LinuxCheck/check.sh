#!/usr/bin/env bash
# Checks the iOS reference (the Swift package in Examples/iOS) on Linux with only a Swift toolchain:
# 1. the package manifest: `swift package dump-package` must list the products PushSealApp and
#    PushSealNotificationExtension, iOS 17;
# 2. the modules as the package builds them, against AppleStubs.swift as a module of its own:
#    PushSealDevice, then PushSealNotificationExtension and PushSealApp importing it, so a
#    declaration the app or the extension needs and PushSealDevice does not make public fails here;
# 3. LinuxCheck.swift run over all sources in one module (vectors through the field checks and
#    sender policy, key records, key lifecycle, sender pins, manifest, replay guard).
# Part of `make test` (the Makefile runs it after the Swift tests).
# Usage: Examples/iOS/LinuxCheck/check.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pkg="$(cd "$here/.." && pwd)"
root="$(cd "$pkg/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
swift="${SWIFT:-swift}"
swiftc="${SWIFTC:-swiftc}"

# 1. The manifest.
"$swift" package --package-path "$pkg" --scratch-path "$work/spm" dump-package > "$work/manifest.json"
python3 - "$work/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
products = {p["name"]: p["targets"] for p in m["products"]}
assert products == {"PushSealApp": ["PushSealApp"], "PushSealNotificationExtension": ["PushSealNotificationExtension"]}, products
assert [(p["platformName"], p["version"]) for p in m["platforms"]] == [("ios", "17.0")], m["platforms"]
deps = {t["name"]: [d.get("byName", [None])[0] for d in t["dependencies"]] for t in m["targets"]}
assert deps == {"PushSealDevice": [], "PushSealNotificationExtension": ["PushSealDevice"], "PushSealApp": ["PushSealDevice"]}, deps
assert m["dependencies"] == [], "the package depends on nothing"
print("check.sh: manifest: products PushSealApp, PushSealNotificationExtension; iOS 17; no dependencies")
PY

# Apple-only imports become the stubs; Darwin.open is Glibc.open here; URLSession needs FoundationNetworking.
rewrite() {  # rewrite SRC DST STUBIMPORT
    sed -E -e "/^(@preconcurrency )?import (CryptoKit|Security|UserNotifications|os|BackgroundTasks)\$/d" \
        -e "s/^import Foundation\$/import Foundation\nimport FoundationNetworking$3/" \
        -e 's/Darwin\.open\(/Glibc.open(/' "$1" > "$2"
}

# 2. The modules, as SwiftPM builds them (whole module, Swift 6 mode).
mod="$work/modules"
mkdir -p "$mod"
compile() {  # compile MODULE FILES... (warnings are errors: an iOS project building these in Swift 6 sees the same)
    local name="$1"; shift
    "$swiftc" -swift-version 6 -warnings-as-errors -parse-as-library -wmo -Onone -module-name "$name" -I "$mod" \
        -emit-module -emit-module-path "$mod/$name.swiftmodule" -c -o "$mod/$name.o" "$@"
}
compile AppleStubs "$here/AppleStubs.swift"
for m in PushSealDevice PushSealNotificationExtension PushSealApp; do
    mkdir -p "$work/$m"
    for f in "$pkg/Sources/$m"/*.swift; do rewrite "$f" "$work/$m/$(basename "$f")" '\nimport AppleStubs'; done
done
compile PushSealDevice "$work/PushSealDevice"/*.swift
compile PushSealNotificationExtension "$work/PushSealNotificationExtension"/*.swift
compile PushSealApp "$work/PushSealApp"/*.swift
# The extension target's one-line subclass (README.md) against the library, from a module of its own.
printf 'import PushSealNotificationExtension\nfinal class NotificationService: PushSealNotificationExtension.NotificationService, @unchecked Sendable {}\n' > "$work/Principal.swift"
compile ExtensionTarget "$work/Principal.swift"
echo "check.sh: modules: PushSealDevice, PushSealNotificationExtension, PushSealApp and an extension target's subclass compile"

# 3. Behaviour: every source in one module with LinuxCheck.swift; the extension's
# open(_:appID:now:) is made visible to the checker; Bundle.main has no Info.plist here.
mkdir -p "$work/one"
for f in "$pkg"/Sources/*/*.swift; do
    out="$work/one/$(basename "$f")"
    rewrite "$f" "$out.tmp" ''
    sed -E -e '/^@_exported import PushSealDevice$/d' \
        -e 's/    private static func open\(_ userInfo/    static func open(_ userInfo/' \
        -e 's/Bundle\.main\.object\(forInfoDictionaryKey: accessGroupInfoKey\) as\? String/"group.linuxcheck"/' "$out.tmp" > "$out"
    rm "$out.tmp"
done
"$swiftc" -swift-version 6 -parse-as-library -o "$work/linuxcheck" \
    "$here/AppleStubs.swift" "$here/LinuxCheck.swift" "$work/one"/*.swift
"$work/linuxcheck" "$root"
