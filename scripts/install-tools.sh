#!/usr/bin/env bash
# Installs the Go tools that `make lint` (and so `make test`) needs, from the
# Go module proxy with `go install`: golangci-lint, at the version pinned
# below. Idempotent: a tool already installed at that version is left alone.
# The binaries go to $(go env GOBIN), or $(go env GOPATH)/bin.
set -euo pipefail

GO=${GO:-go}
GOLANGCI_LINT_VERSION=v2.15.0

bindir=$($GO env GOBIN)
if [ -z "$bindir" ]; then
	bindir=$($GO env GOPATH)/bin
fi

have_version() { # have_version BINARY VERSION
	[ -x "$bindir/$1" ] && "$bindir/$1" version 2>/dev/null | grep -q "version ${2#v} "
}

if ! have_version golangci-lint "$GOLANGCI_LINT_VERSION"; then
	echo "installing golangci-lint $GOLANGCI_LINT_VERSION into $bindir (go install, a few minutes the first time)" >&2
	# GOWORK=off and GOFLAGS= so the project's go.work and flags do not
	# interfere with building the tool as its own module.
	GOWORK=off GOFLAGS= $GO install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
fi
