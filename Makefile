# PushSeal — the two commands a newcomer needs: `make demo` and `make test`.
# Both install what is missing first (scripts/install-deps.sh), then build and run.

SWIFT ?= swift
SHARED ?= $(abspath ../shared)
export PUSHSEAL_SHARED := $(SHARED)

.PHONY: all deps build release demo test bench fuzz clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

demo: release
	@scripts/demo.sh

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

bench: release
	@.build/release/push-bench

clean:
	rm -rf .build .demo
