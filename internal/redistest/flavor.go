package redistest

import (
	"fmt"
	"os/exec"
)

// Flavor names a server implementation: which binaries to run and which
// packages install them.
type Flavor string

// The flavors the harness can start.
const (
	// Redis runs redis-server and redis-cli (Debian: redis-server redis-tools).
	Redis Flavor = "redis"
	// Valkey runs valkey-server and valkey-cli (Debian bookworm-backports:
	// valkey-server valkey-tools).
	Valkey Flavor = "valkey"
)

func (f Flavor) serverBin() string { return string(f) + "-server" }

func (f Flavor) cliBin() string { return string(f) + "-cli" }

// installHint says how to install the binaries of f.
func (f Flavor) installHint() string {
	switch f {
	case Valkey:
		return "install it from bookworm-backports with `apt-get install -t bookworm-backports valkey-server valkey-tools`, or run scripts/install-deps.sh (`make test` does)"
	default:
		return "install it with `apt-get install redis-server redis-tools`, or run scripts/install-deps.sh (`make test` does)"
	}
}

// lookPath finds bin, one of f's binaries, in PATH; the error names the
// package to install.
func (f Flavor) lookPath(bin string) (string, error) {
	if f != Redis && f != Valkey {
		return "", fmt.Errorf("redistest: unknown flavor %q", string(f))
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%s not found in PATH: %s", bin, f.installHint())
	}
	return path, nil
}
