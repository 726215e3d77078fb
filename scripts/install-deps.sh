#!/usr/bin/env bash
# Installs what PushSeal needs on a fresh Debian machine that has the Swift toolchain:
# the C libraries (libssl-dev, libsodium-dev, libcurl4-openssl-dev, pkg-config), shellcheck (the
# tests lint scripts/gen-cli-docs.sh with it) and Python's `cryptography` and `pyhpke` (used by the
# interop tests and the benchmark's peers). Idempotent; quiet when all is there.
set -euo pipefail

need_apt=()
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
pkg-config --exists libcrypto 2>/dev/null || need_apt+=(libssl-dev)
pkg-config --exists libsodium 2>/dev/null || need_apt+=(libsodium-dev)
pkg-config --exists libcurl 2>/dev/null || need_apt+=(libcurl4-openssl-dev)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)

if [ ${#need_apt[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "install-deps: error: need root or sudo to install: ${need_apt[*]}" >&2; exit 77; }
    sudo="sudo"
  fi
  echo "install-deps: installing ${need_apt[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! python3 -c 'import cryptography' >/dev/null 2>&1; then
  echo "install-deps: installing Python cryptography" >&2
  python3 -m pip install --quiet cryptography 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages cryptography
fi

if ! python3 -c 'import pyhpke' >/dev/null 2>&1; then
  echo "install-deps: installing Python pyhpke" >&2
  python3 -m pip install --quiet pyhpke 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages pyhpke
fi
