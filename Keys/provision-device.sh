#!/usr/bin/env bash
# Set up an emulated device keychain with app and extension entitlements and import its key record.
#
# Usage: Keys/provision-device.sh DEVICE_KEYCHAIN RECORD_FILE TEAM_ID BUNDLE_ID
#   Writes DEVICE_KEYCHAIN.entitlements/app.json and ext.json (the app and its Notification
#   Service Extension, sharing keychain access group TEAM_ID.BUNDLE_ID.shared and App Group
#   group.BUNDLE_ID), imports RECORD_FILE as the app, then checks that the extension sees the keyset.
# Env: PUSH_KEYS (the push-keys binary; default: push-keys on PATH).
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

"$push_keys" import --keychain "$device" --entitlements "$ents/app.json" --app-id "$bundle" "$record"
if ! "$push_keys" list --keychain "$device" --entitlements "$ents/ext.json" --app-id "$bundle" | grep -q .; then
  echo "$0: error: the extension identity cannot see the imported keyset" >&2
  exit 1
fi
echo "$ents"
