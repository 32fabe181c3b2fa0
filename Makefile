# The two commands a newcomer needs: `make demo` and `make test`.
# Everything else is for developers. Go modules: the library (.), the
# command-line tool and demo (cmd/redislock), benchmarks against other
# libraries (bench), fault-injection tests (chaos), the comparison with
# bsm/redislock (compat), integrations (extra/*:
# OpenTelemetry, Prometheus, robfig/cron, goose, golang-migrate). Each
# sub-module has its own go.mod, so the library never depends on what they
# use.

SUBMODULES := $(wildcard cmd/redislock bench chaos compat extra/redislockotel extra/redislockprom extra/redislockcron extra/redislockgoose extra/redislockmigrate)
GO ?= go

.PHONY: test test-go1.27 gotest lint tools demo deps vet build bench install chaos fuzz

## test: install redis/valkey if missing, golangci-lint, go vet and every test with -race, in every module; every failing step and module is reported before it exits non-zero
test: deps tools
	@failed=""; \
	$(MAKE) --no-print-directory lint || failed="$$failed lint"; \
	$(MAKE) --no-print-directory vet || failed="$$failed vet"; \
	$(MAKE) --no-print-directory gotest || failed="$$failed gotest"; \
	if [ -n "$$failed" ]; then echo "make test: failed:$$failed" >&2; exit 1; fi

# gotest: every test of every module with -race. Each module is tested from
# its own directory: with go.work present, ./... still names the packages of
# the module in that directory only.
gotest:
	@failed=""; for m in . $(SUBMODULES); do \
		echo "== test $$m"; \
		(cd $$m && $(GO) test -race -count=1 -parallel 8 ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "tests failed in:$$failed" >&2; exit 1; fi

## test-go1.27: go vet and every test again on Go 1.27 (the toolchain comes from the module proxy; go.mod stays at go 1.26)
GO127 ?= go1.27.3
test-go1.27: deps
	GOTOOLCHAIN=$(GO127) $(GO) version
	GOTOOLCHAIN=$(GO127) $(MAKE) --no-print-directory vet gotest

## lint: golangci-lint (.golangci.yml) on every module; scripts/install-tools.sh installs it when missing
GOLANGCI_LINT ?= $(or $(shell $(GO) env GOBIN),$(shell $(GO) env GOPATH)/bin)/golangci-lint
lint: tools
	@failed=""; for m in . $(SUBMODULES); do \
		echo "== lint $$m"; \
		(cd $$m && $(GOLANGCI_LINT) run ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "golangci-lint failed in:$$failed" >&2; exit 1; fi

## tools: the linter, from the Go module proxy (idempotent)
tools:
	@GO=$(GO) bash scripts/install-tools.sh

## demo: fair turns, keep-alive, fencing and `redislock run` skipping a running job, on an embedded Redis (or $$REDIS_URL)
demo:
	cd cmd/redislock && $(GO) run . demo

## deps: the servers the tests start (apt-get, when missing)
deps:
	@bash scripts/install-deps.sh

vet:
	@failed=""; for m in . $(SUBMODULES); do \
		(cd $$m && $(GO) vet ./...) || failed="$$failed $$m"; \
	done; \
	if [ -n "$$failed" ]; then echo "go vet failed in:$$failed" >&2; exit 1; fi

## build: the command-line tool, into bin/redislock (--version from git describe)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION)
build:
	cd cmd/redislock && $(GO) build -ldflags "$(LDFLAGS)" -o ../../bin/redislock .

## install: the command-line tool from this checkout, into $$GOBIN (a release installs with go install github.com/redislock/redislock/cmd/redislock@VERSION), and its man page and bash/zsh completion under $$(DESTDIR)$$(PREFIX)
PREFIX ?= /usr/local
install:
	cd cmd/redislock && $(GO) install -ldflags "$(LDFLAGS)" .
	install -D -m 644 cmd/redislock/redislock.1 $(DESTDIR)$(PREFIX)/share/man/man1/redislock.1
	install -D -m 644 cmd/redislock/completion/redislock.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/redislock
	install -D -m 644 cmd/redislock/completion/_redislock $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_redislock

## bench: this library beside bsm/redislock, redsync, rueidislock and raw go-redis, one redis-server (and 5 independent ones for the quorum section), one run (about 3½ minutes); writes bench/results/results.md and chart.svg
bench: deps
	cd bench && $(GO) run . -out results -rev "$(VERSION)"

## bench-micro: the library's own microbenchmarks beside raw go-redis
.PHONY: bench-micro
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 .

## bench-contention: 8 and 64 workers on one hot key, per retry strategy (about a minute), as a Markdown table; REDISLOCK_CONTENTION=designs for the design prototypes
.PHONY: bench-contention
bench-contention: deps
	cd bench && mode=$${REDISLOCK_CONTENTION:-strategies} && [ "$$mode" != 1 ] || mode=strategies; \
	$(GO) run . -contention "$$mode" -contention-duration "$${REDISLOCK_CONTENTION_DURATION:-3s}" \
		-contention-out "$${REDISLOCK_CONTENTION_OUT:-}" -addr "$${REDISLOCK_CONTENTION_ADDR:-}"

## soak: the multi-process soak of WaitForRelease (8 processes, crashes, SCRIPT FLUSH) for a minute; make test runs 8 s of it
.PHONY: soak
soak: deps
	$(GO) test -race -count=1 -run '^TestSoakProcesses$$' -soak.long -v .

## chaos: the long fault schedules and the full load test (minutes), then the results table
chaos: deps
	cd chaos && $(GO) test -race -count=1 -timeout 60m -chaos.long

## fuzz: every fuzz target of the library for $$(FUZZTIME) each (default 10s)
FUZZTIME ?= 10s
fuzz:
	@for p in . ./internal/keyslot ./internal/value; do for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
		echo "== $$p $$f"; \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || exit 1; \
	done; done
