#!/usr/bin/env bash
# Set up an emulated device keychain with app and extension entitlements and import its key record.
#
# Usage: Keys/provision-device.sh DEVICE_KEYCHAIN RECORD_FILE TEAM_ID BUNDLE_ID
#   Writes DEVICE_KEYCHAIN.entitlements/app.json and ext.json (the app and its Notification
#   Service Extension, sharing keychain access group TEAM_ID.BUNDLE_ID.shared and App Group
#   group.BUNDLE_ID), imports RECORD_FILE as the app (one kind 1 key item per key, the layout of
#   docs/keychain.md "Device key items" that Examples/iOS reads), then checks that the extension
#   sees the keys.
# Env: PUSH_KEYS (the push-keys binary; default: push-keys on PATH).
# Output (stdout), one "name: value" line each, then the command to run next (push-keys import's
# own line goes to stderr):
#   app entitlements: DEVICE_KEYCHAIN.entitlements/app.json
#   extension entitlements: DEVICE_KEYCHAIN.entitlements/ext.json
#   keychain access group: TEAM_ID.BUNDLE_ID.shared
#   app group: group.BUNDLE_ID
#   next: push-open --keychain DEVICE_KEYCHAIN --app-id BUNDLE_ID --entitlements DEVICE_KEYCHAIN.entitlements/ext.json PAYLOAD.json
set -euo pipefail

if [[ $# -ne 4 ]]; then
  echo "usage: $0 DEVICE_KEYCHAIN RECORD_FILE TEAM_ID BUNDLE_ID" >&2
  exit 64
fi
device=$1
record=$2
team=$3
bundle=$4
push_keys=${PUSH_KEYS:-push-keys}

umask 077
ents="$device.entitlements"
mkdir -p "$ents"
shared="$team.$bundle.shared"
group="group.$bundle"
printf '{"application-identifier":"%s","keychain-access-groups":["%s"],"application-groups":["%s"]}\n' \
  "$team.$bundle" "$shared" "$group" > "$ents/app.json"
printf '{"application-identifier":"%s","keychain-access-groups":["%s"],"application-groups":["%s"]}\n' \
  "$team.$bundle.NotificationService" "$shared" "$group" > "$ents/ext.json"

# The import's own line ("APP RECIPIENT: imported KEY_ID") goes to stderr: stdout is the summary below.
"$push_keys" import --keychain "$device" --entitlements "$ents/app.json" --app-id "$bundle" "$record" >&2
if ! "$push_keys" device list --keychain "$device" --entitlements "$ents/ext.json" --app-id "$bundle" | grep -q '^v1 '; then
  echo "$0: error: the extension identity cannot see the imported keys" >&2
  exit 1
fi
echo "app entitlements: $ents/app.json"
echo "extension entitlements: $ents/ext.json"
echo "keychain access group: $shared"
echo "app group: $group"
# %q quotes a path with spaces so the line can be pasted as is.
printf 'next: push-open --keychain %q --app-id %q --entitlements %q PAYLOAD.json\n' "$device" "$bundle" "$ents/ext.json"
