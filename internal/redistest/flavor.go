package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Flavor names a server implementation and version line: which binaries to
// run and where they come from.
type Flavor string

// The flavors the harness can start.
const (
	// Redis runs redis-server and redis-cli from PATH (Debian 12: Redis 7.0,
	// packages redis-server redis-tools).
	Redis Flavor = "redis"
	// Valkey runs valkey-server and valkey-cli from PATH (Debian 12
	// bookworm-backports: Valkey 8.0, packages valkey-server valkey-tools).
	Valkey Flavor = "valkey"
	// Redis8 runs Redis 8.0 from Debian sid, unpacked into [ServersDir] by
	// scripts/install-sid-servers.sh, through sid's own dynamic loader.
	Redis8 Flavor = "redis8"
	// Valkey9 runs Valkey 9.1 from Debian sid, as [Redis8] does.
	Valkey9 Flavor = "valkey9"
)

// ServersEnv is the environment variable naming the folder that holds the
// flavors fetched from Debian sid (one sub-folder per flavor, as
// scripts/install-sid-servers.sh writes them). See [ServersDir].
const ServersEnv = "REDISLOCK_SERVERS"

// ServersDir returns the folder holding the flavors fetched from Debian sid:
// $REDISLOCK_SERVERS if set, else $XDG_CACHE_HOME/redislock/servers, else
// ~/.cache/redislock/servers; the same rule as
// scripts/install-sid-servers.sh. It returns "" only when none of these can
// be determined.
func ServersDir() string {
	if d := os.Getenv(ServersEnv); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "redislock", "servers")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "redislock", "servers")
	}
	return ""
}

// program returns the name the binaries of f start with.
func (f Flavor) program() string {
	switch f {
	case Redis8:
		return "redis"
	case Valkey9:
		return "valkey"
	}
	return string(f)
}

// serverBin names f's server in messages and directory names, as in
// "redis-server" or "valkey9-server".
func (f Flavor) serverBin() string { return string(f) + "-server" }

// cliBin names f's command-line client in messages, as in "redis-cli".
func (f Flavor) cliBin() string { return string(f) + "-cli" }

// installHint says how to get the binaries of f.
func (f Flavor) installHint() string {
	switch f {
	case Valkey:
		return "install it from bookworm-backports with `apt-get install -t bookworm-backports valkey-server valkey-tools`, or run scripts/install-deps.sh (`make test` does)"
	case Redis8, Valkey9:
		return "fetch it from Debian sid with scripts/install-sid-servers.sh (scripts/install-deps.sh and `make test` run it; set " + ServersEnv + " if it was fetched elsewhere)"
	default:
		return "install it with `apt-get install redis-server redis-tools`, or run scripts/install-deps.sh (`make test` does)"
	}
}

// command is how to run one binary of a flavor: path, then args before the
// binary's own arguments.
type command struct {
	path string
	args []string
}

// with returns the command line with the binary's own args appended.
func (c command) with(args ...string) (string, []string) {
	return c.path, append(append([]string(nil), c.args...), args...)
}

// server returns how to run f's server; the error names what to install.
func (f Flavor) server() (command, error) { return f.find("server") }

// cli returns how to run f's command-line client.
func (f Flavor) cli() (command, error) { return f.find("cli") }

// find returns how to run f's binary PROGRAM-role ("server" or "cli"). A
// flavor from sid runs through the loader of its own folder, with its
// libraries: "ROOT/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
// --library-path ROOT/usr/lib/x86_64-linux-gnu ROOT/usr/bin/redis-server".
func (f Flavor) find(role string) (command, error) {
	bin := f.program() + "-" + role
	switch f {
	case Redis, Valkey:
		path, err := exec.LookPath(bin)
		if err != nil {
			return command{}, fmt.Errorf("redistest: %s not found in PATH: %s", bin, f.installHint())
		}
		return command{path: path}, nil
	case Redis8, Valkey9:
		dir := ServersDir()
		if dir == "" {
			return command{}, fmt.Errorf("redistest: %s: no folder for servers from sid (set %s): %s", f, ServersEnv, f.installHint())
		}
		root := filepath.Join(dir, string(f))
		lib := filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")
		loader := filepath.Join(lib, "ld-linux-x86-64.so.2")
		path := filepath.Join(root, "usr", "bin", bin)
		for _, p := range []string{loader, path} {
			if _, err := os.Stat(p); err != nil {
				return command{}, fmt.Errorf("redistest: %s: %s not found (%w): %s", f, p, err, f.installHint())
			}
		}
		return command{path: loader, args: []string{"--library-path", lib, path}}, nil
	}
	return command{}, fmt.Errorf("redistest: unknown flavor %q", string(f))
}
