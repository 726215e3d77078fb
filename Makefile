# PushSeal — the two commands a newcomer needs: `make demo` and `make test`.
# Both install what is missing first (scripts/install-deps.sh), then build and run.

SWIFT ?= swift
SHARED ?= $(abspath ../shared)
FUZZ_SECONDS ?= 600
export PUSHSEAL_SHARED := $(SHARED)

.PHONY: all deps build release demo test bench fuzz sanitize clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

demo: release
	@python3 scripts/demo.py

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

bench: release
	@.build/release/push-bench

fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# The test suite under AddressSanitizer and ThreadSanitizer (slow; not part of `make test`).
sanitize: deps
	$(SWIFT) test --sanitize=address --scratch-path .build/asan
	$(SWIFT) test --sanitize=thread --scratch-path .build/tsan

clean:
	rm -rf .build .demo
