// Command redislock is the command-line tool of
// github.com/redislock/redislock.
//
// Usage:
//
//	redislock <command> [flags]
//
// Run "redislock --help" for the list of commands and "redislock <command>
// --help" for the flags of one.
//
// It is a module of its own so that what it needs (an embedded miniredis
// for the demo) never becomes a dependency of the library.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

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
var commands = []command{
	{name: "demo", summary: "show workers contending for a lock, and fencing refusing a stale holder", run: runDemo},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a subcommand and returns the exit code. No args or
// an unknown command prints the usage on stderr and returns 2; a request
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
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "redislock: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: redislock <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "redislock <command> --help" for the flags of a command.`)
}

// parseFlags parses a subcommand's args into fs, whose Usage describes the
// subcommand. It returns ok when the subcommand should go on. Otherwise it
// returns the exit code: 0 after printing the usage on stdout for -h or
// --help, 2 after printing the error and the usage on stderr for a bad
// flag.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, on the stream that fits
	fs.SetOutput(stderr)
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return 0, false
	default:
		// fs has already printed the error on stderr.
		fs.Usage()
		return 2, false
	}
}
