#!/usr/bin/env bash
# Type-checks the iOS reference in Swift 6 mode on Linux against AppleStubs.swift and runs
# LinuxCheck.swift (vectors through the field checks and sender policy, key records, key
# lifecycle, replay guard). Needs only a Swift toolchain. Usage: Examples/iOS/LinuxCheck/check.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for f in NotificationService PushSealDeviceKeys PushSealWire PushSealRegistration; do
    # Apple-only imports are replaced by the stubs; Darwin.open is Glibc.open here; the
    # extension's open(_:appID:now:) is made visible to the checker; Bundle.main has no Info.plist.
    sed -E -e '/^(@preconcurrency )?import (CryptoKit|Security|UserNotifications|os|BackgroundTasks)$/d' \
        -e 's/^import Foundation$/import Foundation\nimport FoundationNetworking/' \
        -e 's/Darwin\.open\(/Glibc.open(/' \
        -e 's/    private static func open\(_ userInfo/    static func open(_ userInfo/' \
        -e 's/Bundle\.main\.object\(forInfoDictionaryKey: accessGroupInfoKey\) as\? String/"group.linuxcheck"/' \
        "$here/../$f.swift" > "$work/$f.swift"
    if cmp -s "$here/../$f.swift" "$work/$f.swift"; then echo "check.sh: nothing rewritten in $f.swift" >&2; exit 1; fi
done
swiftc -swift-version 6 -parse-as-library -o "$work/linuxcheck" \
    "$here/AppleStubs.swift" "$here/LinuxCheck.swift" "$work"/*.swift
"$work/linuxcheck" "$root"
