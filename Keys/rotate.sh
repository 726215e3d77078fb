#!/usr/bin/env bash
# Rotate every due keyset of a server keychain and write the new device key records to an outbox.
#
# Usage: Keys/rotate.sh SERVER_KEYCHAIN OUTBOX_DIR [--grace DURATION] [--period DURATION] [--stage]
#   --grace   grace window of the old primary (default 30d)
#   --period  rotation period for `push-keys due` (default 30d)
#   --stage   add the new keys without promoting them (promote after the devices got the records)
# Env: PUSH_KEYS (the push-keys binary; default: push-keys on PATH).
# Output: one line per rotated keyset: APP RECIPIENT NEW_KEY_ID RECORD_FILE (tab-separated).
# Outbox files are OUTBOX/APP/RECIPIENT-KEYID.json, created exclusively with mode 0600.
# Safe to rerun: an interrupted rotation shows up in `due` as unfinishedRotation and is completed.
set -euo pipefail

usage() { echo "usage: $0 SERVER_KEYCHAIN OUTBOX_DIR [--grace DURATION] [--period DURATION] [--stage]" >&2; exit 64; }
[[ $# -ge 2 ]] || usage
server=$1
outbox=$2
shift 2
grace=30d
period=30d
stage=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --grace) [[ $# -ge 2 ]] || usage; grace=$2; shift 2 ;;
    --period) [[ $# -ge 2 ]] || usage; period=$2; shift 2 ;;
    --stage) stage=(--no-promote); shift ;;
    *) usage ;;
  esac
done
push_keys=${PUSH_KEYS:-push-keys}

umask 077
mkdir -p "$outbox"
chmod 700 "$outbox"

due=$("$push_keys" due --keychain "$server" --period "$period")
[[ -n $due ]] || exit 0
while IFS=$'\t' read -r app recipient _ _ _ _; do
  new_key=$("$push_keys" rotate --keychain "$server" --app-id "$app" --recipient "$recipient" --grace "$grace" "${stage[@]}")
  mkdir -p "$outbox/$app"
  record="$outbox/$app/$recipient-$new_key.json"
  if [[ ! -e $record ]]; then
    "$push_keys" export --keychain "$server" --app-id "$app" --recipient "$recipient" --out "$record" >/dev/null
  fi
  printf '%s\t%s\t%s\t%s\n' "$app" "$recipient" "$new_key" "$record"
done <<< "$due"
