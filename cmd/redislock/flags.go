package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

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

// parseInterspersed is parseFlags for subcommands whose flags may come
// before, between and after their arguments ("release KEY --token T"). It
// returns the arguments, in order. After "--" everything is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (positional []string, code int, ok bool) {
	for {
		if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
			return nil, code, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, 0, true
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			// Parse stopped after the terminator. (Were "--" the value of
			// the flag before it, flags after it are taken as arguments:
			// harmless, they are refused as such.)
			return append(positional, rest...), 0, true
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// parseRunArgs parses "run"'s args, "[flags] KEY [flags] [--] COMMAND
// [ARG...]": flags may come before and after KEY; the first argument after
// KEY that is not a flag, or everything after "--", is the command, whose
// own flags are left alone. It returns KEY and the command, which may be
// empty.
func parseRunArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (key string, command []string, code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return "", nil, code, false
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", nil, 0, true
	}
	key = rest[0]
	if code, ok := parseFlags(fs, rest[1:], stdout, stderr); !ok {
		return "", nil, code, false
	}
	return key, fs.Args(), 0, true
}

// usageFailure reports a usage error of the subcommand name on stderr, with
// a pointer to its help, and returns exit code 2.
func usageFailure(stderr io.Writer, name, msg string) int {
	fmt.Fprintf(stderr, "redislock %s: %s\nRun \"redislock %s --help\" for usage.\n", name, msg, name)
	return exitUsage
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
