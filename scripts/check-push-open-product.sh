#!/usr/bin/env bash
# push-open built alone (`swift build --product push-open`, in a scratch path of its own, so
# nothing else of the package is built beside it) downloads and attaches media: the media
# fetcher is an ordinary dependency of push-open, and libcurl is loaded by dlopen on the first
# download (CCurlLazy), never needed at build or link time of push-open's own product.
# Checks it links FoundationEssentials only (no full Foundation, no ICU), then runs
# PushOpenMediaCLITests against that binary (the test bundle must be built already:
# `make test` runs `swift build --build-tests` first). Exit status: that of `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
scratch=${PUSH_OPEN_PRODUCT_SCRATCH:-.build/product-push-open}
"$SWIFT" build --product push-open --scratch-path "$scratch"
# --show-bin-path prints an absolute path.
bin="$("$SWIFT" build --product push-open --scratch-path "$scratch" --show-bin-path)/push-open"
# Nothing but push-open's own graph: no media library or other product beside it.
if ls "$(dirname "$bin")"/*.so >/dev/null 2>&1; then
    echo "check-push-open-product: error: shared libraries beside push-open: $(ls "$(dirname "$bin")"/*.so)" >&2
    exit 1
fi
# FoundationEssentials only: full Foundation (and ICU with it) costs push-open ~15 ms and ~5 MiB
# at every start (issue 5's cold-start and RSS targets). A module push-open links that writes
# `import Foundation` without the `canImport(FoundationEssentials)` guard brings it back.
# A release build of push-open links the Swift runtime statically (Package.swift, issue 28), so full
# Foundation would show as its symbols rather than as a shared library: both are checked.
nm "$bin" > "$scratch/push-open.nm" 2>/dev/null || true
# shellcheck disable=SC2016  # $s is the Swift mangling prefix, not a variable
if heavy=$(ldd "$bin" | grep -E 'libFoundation\.so|libFoundationInternationalization\.so|lib_FoundationICU\.so' \
           || grep -E '\$s(10Foundation|31FoundationInternationalization)[0-9A-Za-z_]' "$scratch/push-open.nm"); then
    echo "check-push-open-product: error: push-open links full Foundation/ICU:" >&2
    echo "$heavy" >&2
    echo "hint: import FoundationEssentials under '#if canImport(FoundationEssentials)' in the modules push-open links" >&2
    exit 1
fi
PUSHSEAL_TEST_PUSH_OPEN="$bin" "$SWIFT" test --skip-build --filter PushOpenMediaCLITests
