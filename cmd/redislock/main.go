// Command redislock is the command-line tool of
// github.com/redislock/redislock: it runs a command under a distributed
// lock (like flock(1) across machines), shows and releases locks, and
// demonstrates the library.
//
// Usage:
//
//	redislock run [flags] KEY [--] COMMAND [ARG...]
//	redislock status [flags] KEY...
//	redislock release [flags] KEY... --token TOKEN
//	redislock demo [--redis URL]
//	redislock completion bash|zsh
//	redislock version
//
// Run "redislock --help" for the list of commands and "redislock <command>
// --help" for the flags of one, with examples; redislock.1 is the man page.
//
// It is a module of its own so that what it needs (an embedded miniredis
// for the demo, a pty for the tests) never becomes a dependency of the
// library. Install a release with "go install
// github.com/redislock/redislock/cmd/redislock@VERSION", or from a checkout
// with "make install" (the binary, the man page and the completion
// scripts).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Writes to stdout and stderr are not checked (they are discarded with
// "_, _ ="): a failing terminal or pipe leaves nowhere to report it.

// command is one subcommand: "redislock <name> [flags]".
type command struct {
	name    string
	summary string // one line for the command list
	// run parses args (everything after the name) and does the work. It
	// returns the exit code: 0 done, 1 failed, 2 misused.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands, in the order the usage shows them. A new
// subcommand is one more entry here and a file of its own.
func commands() []command {
	return []command{
		{name: "run", summary: "run a command while holding a lock, and release it when the command exits", run: runRun},
		{name: "status", summary: "show whether locks are held, by whom, for how long", run: runStatus},
		{name: "release", summary: "release a lock given its token (cleanup after a crashed holder)", run: runRelease},
		{name: "demo", summary: "show fair turns, a keep-alive and its loss, fencing, and run skipping a running job", run: runDemo},
		{name: "version", summary: "print the version", run: runVersion},
		{name: "completion", summary: "print a shell completion script: completion bash|zsh", run: runCompletion},
	}
}

func main() {
	// go-redis logs failed dials and the like on stderr; every error the
	// tool meets is reported once, in its own words.
	redis.SetLogger(quietLogger{})
	// "run" handles signals itself (it forwards them to its command).
	// SIGTERM is never reported ignored, so the list is never empty (which
	// would mean every signal).
	ctx, stop := signal.NotifyContext(context.Background(), notIgnored(os.Interrupt, syscall.SIGTERM)...)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quietLogger discards go-redis's log messages.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// run dispatches args to a subcommand and returns the exit code. No args
// prints the usage on stderr and returns 2, an unknown command one line
// and where to find the usage; a request
// for help prints it on stdout and returns 0.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "-V", "-version", "--version":
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	_, _ = fmt.Fprintf(stderr, "redislock: unknown command %q\nsee 'redislock --help'\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	_, _ = fmt.Fprintln(w, "usage: redislock <command> [flags]")
	_, _ = fmt.Fprintln(w, "       redislock --version (-V)")
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, "Commands:")
	width := 0
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	for _, c := range commands() {
		_, _ = fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, mainHelp)
}

const mainHelp = `Redis: --redis URL on each command, else $REDIS_URL, else redis://127.0.0.1:6379;
--cluster and --sentinel-master for Cluster and Sentinel; --redis given 3, 5 or more
times for a quorum of independent masters (see a command's --help).

Examples:
  redislock run --ttl 1m nightly-report -- ./report.sh
  redislock status nightly-report
  redislock release nightly-report --token TOKEN

Run "redislock <command> --help" for the flags of a command, with examples.`
