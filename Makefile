# The two commands a newcomer needs: `make demo` and `make test`.
# Everything else is for developers. Go modules: the library (.), the
# command-line tool and demo (cmd/redislock), benchmarks against other
# libraries (bench), fault-injection tests (chaos). Each sub-module has its
# own go.mod, so the library never depends on what they use.

SUBMODULES := $(wildcard cmd/redislock bench chaos)
GO ?= go

.PHONY: test demo deps vet build bench install

## test: install redis/valkey if missing, then go vet and every test with -race
test: deps vet
	$(GO) test -race -count=1 ./...
	@for m in $(SUBMODULES); do \
		echo "== $$m"; \
		(cd $$m && $(GO) test -race -count=1 ./...) || exit 1; \
	done

## demo: contention and fencing on an embedded Redis (or $$REDIS_URL)
demo:
	cd cmd/redislock && $(GO) run . demo

## deps: the servers the tests start (apt-get, when missing)
deps:
	@bash scripts/install-deps.sh

vet:
	$(GO) vet ./...
	@for m in $(SUBMODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done

## build: the command-line tool, into bin/redislock
build:
	cd cmd/redislock && $(GO) build -o ../../bin/redislock .

## install: the command-line tool, into $$GOBIN
install:
	cd cmd/redislock && $(GO) install .

## bench: the library's own benchmarks beside raw go-redis
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 .
