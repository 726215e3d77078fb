#!/usr/bin/env bash
# Stage a new key for every due keyset of a server keychain, write its device key record to an
# outbox, and promote a staged key only once the phones have it.
#
# Usage: Keys/rotate.sh SERVER_KEYCHAIN OUTBOX_DIR [--grace DURATION] [--period DURATION]
#                       [--acks ACK_DIR] [--promote-after DURATION]
#   --grace          grace window of the old primary once the new key is promoted (default 30d)
#   --period         rotation period for `push-keys due` (default 30d)
#   --acks           promote a staged key when ACK_DIR/APP/RECIPIENT-KEYID.ack exists: your backend
#                    writes it when the app reports, over its own authenticated session, that it
#                    imported KEYID into its keychain
#   --promote-after  promote a staged key once it was staged at least DURATION ago, acknowledged
#                    or not (a phone without it shows the APNs alert text of later notifications)
#   --stage          accepted for compatibility: staging is the default
# DURATION: N, Ns, Nm, Nh or Nd (N a whole number; plain N is seconds).
#
# Staging is the default: a due keyset gets a new pending key (push-keys rotate --no-promote),
# which nothing seals with, and its record in the outbox. Without --acks or --promote-after a
# run never promotes, and a later plain run leaves a staged key staged (it only re-lists it).
# Env: PUSH_KEYS (the push-keys binary; default: push-keys on PATH).
# Output: one line per due keyset: APP RECIPIENT KEY_ID RECORD_FILE STATE (tab-separated;
# STATE is staged or promoted).
# Outbox files, created exclusively with mode 0600: OUTBOX/APP/RECIPIENT-KEYID.json when staged
# (the new key pending), OUTBOX/APP/RECIPIENT-KEYID-promoted.json after the promotion (the old
# primary decryptOnly); RECORD_FILE is the newer one. Deliver both to the phone.
# Safe to rerun: a staged or interrupted rotation shows up in `due` as unfinishedRotation.
set -euo pipefail

usage() {
  echo "usage: $0 SERVER_KEYCHAIN OUTBOX_DIR [--grace DURATION] [--period DURATION] [--acks ACK_DIR] [--promote-after DURATION]" >&2
  exit 64
}
# seconds DURATION: prints the duration in seconds, or exits 64.
seconds() {
  local d=$1
  [[ $d =~ ^([0-9]+)([smhd]?)$ ]] || { echo "$0: error: bad duration '$d' (N, Ns, Nm, Nh or Nd)" >&2; exit 64; }
  local n=$((10#${BASH_REMATCH[1]}))
  case ${BASH_REMATCH[2]} in
    m) n=$((n * 60)) ;;
    h) n=$((n * 3600)) ;;
    d) n=$((n * 86400)) ;;
  esac
  echo "$n"
}

[[ $# -ge 2 ]] || usage
server=$1
outbox=$2
shift 2
grace=30d
period=30d
acks=
promote_after=
while [[ $# -gt 0 ]]; do
  case $1 in
    --grace) [[ $# -ge 2 ]] || usage; grace=$2; shift 2 ;;
    --period) [[ $# -ge 2 ]] || usage; period=$2; shift 2 ;;
    --acks) [[ $# -ge 2 ]] || usage; acks=$2; shift 2 ;;
    --promote-after) [[ $# -ge 2 ]] || usage; promote_after=$(seconds "$2"); shift 2 ;;
    --stage) shift ;;
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
  # Stage (or find the key an earlier run staged): never promotes.
  new_key=$("$push_keys" rotate --keychain "$server" --app-id "$app" --recipient "$recipient" --grace "$grace" --no-promote)
  mkdir -p "$outbox/$app"
  record="$outbox/$app/$recipient-$new_key.json"
  if [[ ! -e $record ]]; then
    "$push_keys" export --keychain "$server" --app-id "$app" --recipient "$recipient" --out "$record" >/dev/null
  fi
  promote=no
  if [[ -n $acks && -f "$acks/$app/$recipient-$new_key.ack" ]]; then
    promote=yes
  elif [[ -n $promote_after ]]; then
    created=$("$push_keys" list --keychain "$server" --app-id "$app" --recipient "$recipient" |
      awk -F'\t' -v k="$new_key" '$3 == k { print $5 }')
    if [[ -n $created ]] && (( $(date -u +%s) - $(date -u -d "$created" +%s) >= promote_after )); then
      promote=yes
    fi
  fi
  state=staged
  if [[ $promote == yes ]]; then
    "$push_keys" promote --keychain "$server" --app-id "$app" --recipient "$recipient" --key-id "$new_key" --grace "$grace" >/dev/null
    state=promoted
    # The record after the promotion: the old primary now decryptOnly until now + grace, so the
    # phone retires (and later prunes) it too.
    record="$outbox/$app/$recipient-$new_key-promoted.json"
    if [[ ! -e $record ]]; then
      "$push_keys" export --keychain "$server" --app-id "$app" --recipient "$recipient" --out "$record" >/dev/null
    fi
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$app" "$recipient" "$new_key" "$record" "$state"
done <<< "$due"
