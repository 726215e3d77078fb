# PushSeal — the two commands a newcomer needs: `make demo` and `make test`.
# Both install what is missing first (scripts/install-deps.sh), then build and run.

SWIFT ?= swift
# The public test vectors and cases (read by the tests, never copied): ../shared by default,
# or PUSHSEAL_SHARED from the environment, or `make test SHARED=/path/to/shared`.
SHARED ?= $(or $(PUSHSEAL_SHARED),$(abspath ../shared))
FUZZ_SECONDS ?= 600
# `make test` builds with every compiler warning an error (issue 27: zero warnings, kept zero).
# The package has no external dependencies, so this reaches only PushSeal's own Swift targets.
# `make test WERROR=0` builds without it (e.g. to see all warnings a newer compiler adds at once).
WERROR ?= 1
SWIFT_WERROR_FLAGS := $(if $(filter 1,$(WERROR)),-Xswiftc -warnings-as-errors)
export PUSHSEAL_SHARED := $(SHARED)

shared-check:
	@test -d "$(SHARED)/vectors" -a -d "$(SHARED)/cases" || { echo "make: error: the test vectors are not at $(SHARED) (need vectors/ and cases/)" >&2; echo "hint: make test SHARED=/path/to/shared  (or set PUSHSEAL_SHARED)" >&2; exit 66; }

.PHONY: shared-check all deps build release demo demo-postgres demo-gateway test bench bench-gateway perf-check fuzz sanitize clean mock-native schema-probe

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

demo: release
	@python3 scripts/demo.py

# Two sender processes sharing one PostgreSQL registry while the keyset rotates, on a throwaway
# PostgreSQL started and stopped by the script (scripts/pg-throwaway.sh, as the tests do).
demo-postgres: release
	@scripts/demo-postgres.sh

# push-gateway as a backend uses it: a throwaway PostgreSQL, the native mock APNs, two gateway
# instances on one database, Examples/gateway/backend.py (Python, standard library) registering 20
# emulated phones and sending to them, send.mjs (Node, fetch), push-open on each phone. Stops all.
demo-gateway: release
	@scripts/demo-gateway.sh

# The native mock APNs (Tests/MockAPNs/native, C on libnghttp2 + OpenSSL) as .build/mock-apns-native:
# built with the system C compiler, never a SwiftPM product (a mock does not ship with the tools).
mock-native: deps
	@scripts/build-mock-apns.sh >/dev/null

# The whole suite (the native mock built first: the differential test needs it), then push-open built alone (`--product push-open`, its own scratch path) against the media
# CLI tests: its media path must need nothing but its own product; then the iOS package (Examples/iOS):
# its manifest (swift package dump-package), its three modules against the stubs, LinuxCheck's behaviour checks.
test: deps shared-check mock-native
	$(SWIFT) build --build-tests $(SWIFT_WERROR_FLAGS)
	$(SWIFT) test --skip-build
	SWIFT=$(SWIFT) scripts/check-push-open-product.sh
	SWIFT=$(SWIFT) Examples/iOS/LinuxCheck/check.sh

# Builds like `release`, with the build log on stderr: stdout is the benchmark alone, so
# `make bench BENCH_ARGS=--markdown > bench.md` is paste-ready for README's Benchmark section.
bench:
	@scripts/install-deps.sh >&2
	@$(SWIFT) build -c release >&2
	@scripts/build-mock-apns.sh >/dev/null
	@.build/release/push-bench $(BENCH_ARGS)
	@scripts/bench-apns.sh $(BENCH_APNS_ARGS)
	@scripts/bench-registry.sh $(BENCH_REGISTRY_ARGS)
	@scripts/bench-gateway.sh $(BENCH_GATEWAY_ARGS)

# The gateway section of `make bench` alone (scripts/bench-gateway.sh: throughput beside the
# push-seal batch | push-send pipeline, latency at 500/s, peak RSS per instance). Sizes:
# BENCH_GATEWAY_N (1,000,000), BENCH_GATEWAY_THROUGHPUT_N, …; BENCH_GATEWAY_ARGS=--quick to check it.
bench-gateway:
	@scripts/install-deps.sh >&2
	@$(SWIFT) build -c release >&2
	@scripts/build-mock-apns.sh >/dev/null
	@scripts/bench-gateway.sh $(BENCH_GATEWAY_ARGS)

# The plaintext schema's compile-fail check (issue 27 step 3): every codec's switch over
# NotificationMember must refuse a member it does not handle (scripts/schema-probe.sh).
schema-probe: deps
	$(SWIFT) build --target PushSealWire
	scripts/schema-probe.sh

# The hot paths' cost in instructions (callgrind: the same count on an idle or a busy machine),
# held within 3 % of Benchmarks/perf-thresholds.txt: full seal and full open at 256 B and 1 KB,
# one push-seal batch line, one push-send notification to the native mock. Run by .ci/run.
# After a deliberate change: scripts/perf-check.sh --update, and commit the file with the reason.
perf-check: release mock-native
	@scripts/perf-check.sh

fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# The test suite under AddressSanitizer (+ LeakSanitizer) and ThreadSanitizer, one after the
# other, each in its own scratch path (slow; not part of `make test`). Tests/lsan.supp lists
# only leaks inside the Swift toolchain and libcurl, each with its reason; TSan needs none.
# Any report fails the run. TSan's exit code is moved from 66 to 99 so that a report in a spawned
# CLI can never pass for a sysexits code (66 is "input missing") in a CLI test.
sanitize: deps shared-check
	$(SWIFT) build --build-tests --sanitize=address --scratch-path .build/asan
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/lsan.supp \
		$(SWIFT) test --skip-build --sanitize=address --scratch-path .build/asan
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build/tsan
	TSAN_OPTIONS=exitcode=99 \
		$(SWIFT) test --skip-build --sanitize=thread --scratch-path .build/tsan

clean:
	rm -rf .build .demo
