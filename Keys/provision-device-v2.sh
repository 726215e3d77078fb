#!/usr/bin/env bash
# Set up an emulated version 2 phone: app and extension entitlements written for you, the device
# key made and its registration record written, then the published sender keys pinned — all
# before the record is registered, as the iOS reference's lifecycle does (pin, then register: the
# first push decrypts).
#
# Usage: Keys/provision-device-v2.sh DEVICE_KEYCHAIN TEAM_ID BUNDLE_ID [SENDER_RECORDS]
#   Writes DEVICE_KEYCHAIN.entitlements/app.json and ext.json (the app and its Notification
#   Service Extension, sharing keychain access group TEAM_ID.BUNDLE_ID.shared and App Group
#   group.BUNDLE_ID; the same spelling as Keys/provision-device.sh), creates the keychain when
#   missing, makes the v2 device key as the app and writes its registration record to
#   DEVICE_KEYCHAIN.registration.json, pins every record of SENDER_RECORDS (a file of
#   pushseal-sender-key records, one a line, as `push-keys sender export --all` prints them; `-`
#   for stdin; omit for base mode), then checks that the extension sees the key.
# Env: PUSH_KEYS (the push-keys binary; default: push-keys on PATH).
# Output (stdout), one "name: value" line each, then the commands to run next:
#   app entitlements: DEVICE_KEYCHAIN.entitlements/app.json
#   extension entitlements: DEVICE_KEYCHAIN.entitlements/ext.json
#   keychain access group: TEAM_ID.BUNDLE_ID.shared
#   app group: group.BUNDLE_ID
#   registration: DEVICE_KEYCHAIN.registration.json
#   device key id: KEY_ID
#   pinned sender keys: ID ID... (or none)
#   next: push-keys register --keychain SERVER_KEYCHAIN --app-id BUNDLE_ID --recipient R DEVICE_KEYCHAIN.registration.json
#   then: push-open --keychain DEVICE_KEYCHAIN --app-id BUNDLE_ID --entitlements DEVICE_KEYCHAIN.entitlements/ext.json PAYLOAD.json
set -euo pipefail

if [[ $# -lt 3 || $# -gt 4 ]]; then
  echo "usage: $0 DEVICE_KEYCHAIN TEAM_ID BUNDLE_ID [SENDER_RECORDS]" >&2
  exit 64
fi
device=$1
team=$2
bundle=$3
senders=${4:-}
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

if [[ ! -e "$device" ]]; then
  "$push_keys" keychain init --keychain "$device" >&2
fi
app=(--keychain "$device" --entitlements "$ents/app.json" --app-id "$bundle")
registration="$device.registration.json"
# The key first: on a first run (no install marker in the App Group container) `device generate`
# removes PushSeal's leftover items of the app, as after a reinstall, so pins made before it would go.
# Written beside, then renamed: a failed run never leaves an empty record behind.
"$push_keys" device generate "${app[@]}" > "$registration.tmp" || { rm -f "$registration.tmp"; exit 73; }
mv "$registration.tmp" "$registration"
if [[ -n "$senders" ]]; then
  "$push_keys" device pin-sender "${app[@]}" "$senders" >&2
fi
key_id=$(sed -n 's/.*"keyId":"\([^"]*\)".*/\1/p' "$registration")
listing=$("$push_keys" device list --keychain "$device" --entitlements "$ents/ext.json" --app-id "$bundle")
if ! grep -q "^v2 $key_id " <<<"$listing"; then
  echo "$0: error: the extension identity cannot see the device key $key_id" >&2
  exit 1
fi
pins=$(awk '$1 == "sender" { printf "%s%s", sep, $2; sep = " " }' <<<"$listing")
echo "app entitlements: $ents/app.json"
echo "extension entitlements: $ents/ext.json"
echo "keychain access group: $shared"
echo "app group: $group"
echo "registration: $registration"
echo "device key id: $key_id"
echo "pinned sender keys: ${pins:-none}"
printf 'next: push-keys register --keychain SERVER_KEYCHAIN --app-id %q --recipient R %q\n' "$bundle" "$registration"
printf 'then: push-open --keychain %q --app-id %q --entitlements %q PAYLOAD.json\n' "$device" "$bundle" "$ents/ext.json"
