#!/usr/bin/env bash
# Installs what PushSeal needs on a fresh Debian machine that has the Swift toolchain:
# a C compiler and make (the native mock APNs), the C libraries (libssl-dev, libsodium-dev, libcurl4-openssl-dev, libnghttp2-dev, libpq-dev, pkg-config), Debian's
# PostgreSQL server (`postgresql`: the registry tests start a throwaway one), shellcheck (the
# tests lint scripts/gen-cli-docs.sh with it) and Python's `cryptography` and `pyhpke` (used by the
# interop tests and the benchmark's peers). Idempotent; quiet when all is there.
set -euo pipefail

need_apt=()
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
pkg-config --exists libcrypto 2>/dev/null || need_apt+=(libssl-dev)
pkg-config --exists libsodium 2>/dev/null || need_apt+=(libsodium-dev)
pkg-config --exists libcurl 2>/dev/null || need_apt+=(libcurl4-openssl-dev)
pkg-config --exists libnghttp2 2>/dev/null || need_apt+=(libnghttp2-dev)
pkg-config --exists libpq 2>/dev/null || need_apt+=(libpq-dev)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)
# The native mock APNs (Tests/MockAPNs/native, built by scripts/build-mock-apns.sh with the system C compiler).
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || need_apt+=(make)
# The mock APNs (Tests/MockAPNs, Node 20's built-in http2) and its benchmark ceiling (h2load).
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v h2load >/dev/null 2>&1 || need_apt+=(nghttp2-client)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
[ -x /usr/bin/time ] || need_apt+=(time)
# make perf-check counts instructions with callgrind (and strips a copy of each binary with binutils' strip);
# CLITests' ModuleGraphTests reads which modules push-open links with binutils' nm.
command -v valgrind >/dev/null 2>&1 || need_apt+=(valgrind)
{ command -v strip >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; } || need_apt+=(binutils)

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

# pywebpush: the benchmark's Web Push peer beside the v2 full seal (Benchmarks/peers/webpush_peer.py).
if ! python3 -c 'import pywebpush' >/dev/null 2>&1; then
  echo "install-deps: installing Python pywebpush" >&2
  python3 -m pip install --quiet pywebpush 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages pywebpush
fi

# aioapns: the benchmark's peer for push-send (scripts/bench-apns.sh).
if ! python3 -c 'import aioapns' >/dev/null 2>&1; then
  echo "install-deps: installing Python aioapns" >&2
  python3 -m pip install --quiet aioapns 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages aioapns
fi

# h2: the raw HTTP/2 sender of the mocks' differential test (Tests/MockAPNs/raw_h2_requests.py);
# aioapns brings it, this only makes sure.
if ! python3 -c 'import h2' >/dev/null 2>&1; then
  echo "install-deps: installing Python h2" >&2
  python3 -m pip install --quiet h2 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages h2
fi

# PostgreSQL refuses to run as root, and CI runs as root: the registry tests start their
# throwaway server as this unprivileged system user (no login shell, no home).
if [ "$(id -u)" -eq 0 ] && ! id pushseal-test >/dev/null 2>&1; then
  echo "install-deps: creating system user pushseal-test (runs the tests' PostgreSQL)" >&2
  useradd --system --no-create-home --shell /usr/sbin/nologin pushseal-test
fi
