package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version, when set at link time (-ldflags "-X main.version=v1.2.3"),
// overrides the module version recorded by the Go toolchain.
var version string

// versionLine returns "redislock VERSION (library …, go-redis …, go…)".
// The version is that of this module as the toolchain recorded it: the tag
// for "go install …@v1.2.3", a pseudo-version from the VCS for a build in a
// git checkout, or "(devel)".
func versionLine() string {
	v, lib, goredis := version, "", ""
	if info, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = moduleVersion(info)
		}
		for _, d := range info.Deps {
			m := d
			if d.Replace != nil {
				m = d.Replace // the checkout, "(devel)", for a build from it
			}
			switch d.Path {
			case "github.com/redislock/redislock":
				lib = m.Version
			case "github.com/redis/go-redis/v9":
				goredis = m.Version
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	s := "redislock " + v + " ("
	if lib != "" {
		s += "library " + lib + ", "
	}
	if goredis != "" {
		s += "go-redis " + goredis + ", "
	}
	return s + runtime.Version() + ")"
}

// moduleVersion returns the main module's version, or, for a "(devel)"
// build that recorded its VCS state, "(devel) REVISION[+dirty]".
func moduleVersion(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v != "(devel)" && v != "" {
		return v
	}
	rev, dirty := "", ""
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return v
	}
	return "(devel) " + rev[:min(12, len(rev))] + dirty
}

// runVersion is the "version" subcommand (and --version).
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), `usage: redislock version
       redislock --version

Prints the version of redislock, of the library and go-redis it was built
with, and of Go, on one line.

Examples:
  redislock version
  redislock --version`)
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageFailure(stderr, "version", fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	_, _ = fmt.Fprintln(stdout, versionLine())
	return exitOK
}
