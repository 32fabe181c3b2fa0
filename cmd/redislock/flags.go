package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// parseFlags parses a subcommand's args into fs, whose Usage describes the
// subcommand. It returns ok when the subcommand should go on. Otherwise it
// returns the exit code: 0 after printing the usage on stdout for -h or
// --help, 2 after printing one line for a bad flag, and where to read the
// help, on stderr.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	usage := fs.Usage
	fs.Usage = func() {} // printed below, for --help only
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return 0, false
	}
	return usageFailure(stderr, fs.Name(), flagError(err)), false
}

// flagError rewords an error of [flag.FlagSet.Parse] so that it names the
// flag as the help does ("-w", "--wait"), where the flag package names
// every flag with one dash.
func flagError(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag " + dashed(name)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return dashed(name) + " needs a value"
	}
	for _, form := range []struct{ head, mid string }{
		{"invalid value ", " for flag -"},
		{"invalid boolean value ", " for -"},
	} {
		rest, ok := strings.CutPrefix(msg, form.head)
		if !ok {
			continue
		}
		value, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return msg
		}
		rest, ok = strings.CutPrefix(rest[len(value):], form.mid)
		name, why, cut := strings.Cut(rest, ": ")
		if !ok || !cut {
			return msg
		}
		if form.head == "invalid boolean value " {
			why = "want true or false"
		}
		return fmt.Sprintf("invalid value %s for %s: %s", value, dashed(name), why)
	}
	return msg
}

// dashed names a flag as the help does: "-w" for a one-letter name,
// "--wait" for the others.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
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
// empty. present is false when no KEY was given at all (an empty KEY, as
// in "run ” true", is present).
func parseRunArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (key string, present bool, command []string, code int, ok bool) {
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return "", false, nil, code, false
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return "", false, nil, 0, true
	}
	key = rest[0]
	if code, ok := parseFlags(fs, rest[1:], stdout, stderr); !ok {
		return "", false, nil, code, false
	}
	return key, true, fs.Args(), 0, true
}

// usageFailure reports a usage error of the subcommand name on stderr in
// one line, with a pointer to its help, and returns exit code 2.
func usageFailure(stderr io.Writer, name, msg string) int {
	_, _ = fmt.Fprintf(stderr, "redislock %s: %s\nsee 'redislock %s --help'\n", name, msg, name)
	return exitUsage
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// durationValue is a [flag.Value] for a duration that must carry a unit
// ("30s", "1m30s"); a bare number is refused with a message that says so.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			return fmt.Errorf("a duration needs a unit: %ss, %sms or %sm, not %s", s, s, s, s)
		}
		return errors.New("not a duration (e.g. 30s, 500ms, 2m)")
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }

// durationFlag defines a flag for a duration that needs a unit.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := value
	fs.Var((*durationValue)(&d), name, usage)
	return &d
}

// waitValue is the [flag.Value] of "run --wait": a duration ("5s", "2m"),
// seconds as flock(1) takes them ("5", "0.5"), or "forever".
type waitValue struct {
	d       time.Duration
	forever bool
}

func (w *waitValue) Set(s string) error {
	if s == "forever" {
		*w = waitValue{forever: true}
		return nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > math.MaxInt64/float64(time.Second) {
			return errors.New("out of range (give seconds, a duration, or forever)")
		}
		*w = waitValue{d: time.Duration(secs * float64(time.Second))}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want seconds (5, 0.5), a duration (30s, 2m) or forever")
	}
	*w = waitValue{d: d}
	return nil
}

func (w *waitValue) String() string {
	if w.forever {
		return "forever"
	}
	return w.d.String()
}

// aliases maps another name of a flag (a short one, "w", or a long one,
// "timeout") to the flag's own name ("wait"), for [printFlags] and the
// completion scripts: both names are defined on the FlagSet, for the same
// value.
type aliases map[string]string

// alias defines name as another name of the flag long, already defined.
func (a aliases) alias(fs *flag.FlagSet, name, long string) {
	f := fs.Lookup(long)
	fs.Var(f.Value, name, "same as --"+long)
	a[name] = long
}

// of returns the other names of the flag long, one-letter names first,
// each with its dashes: "-w", "--timeout".
func (a aliases) of(long string) []string {
	var names []string
	for n, l := range a {
		if l == long {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(x, y string) int {
		if (len(x) == 1) != (len(y) == 1) {
			return len(x) - len(y)
		}
		return strings.Compare(x, y)
	})
	for i, n := range names {
		names[i] = dashed(n)
	}
	return names
}

// printFlags writes the flags of fs, as flag.PrintDefaults does but with
// "--" and with each flag's other names beside it ("-w, --wait, --timeout").
func printFlags(w io.Writer, fs *flag.FlagSet, other aliases) {
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if _, isAlias := other[f.Name]; !isAlias {
			names = append(names, f.Name)
		}
	})
	slices.Sort(names)
	for _, name := range names {
		f := fs.Lookup(name)
		arg, usage := flag.UnquoteUsage(f)
		var short, long []string
		for _, n := range other.of(name) {
			if strings.HasPrefix(n, "--") {
				long = append(long, n)
			} else {
				short = append(short, n)
			}
		}
		head := "      --" + strings.Join(append([]string{name}, long...), ", ")
		if len(short) > 0 {
			head = "  " + strings.Join(short, ", ") + ", --" + strings.Join(append([]string{name}, long...), ", ")
		}
		if arg != "" && !isBoolFlag(f) {
			head += " " + arg
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0s" && !strings.Contains(usage, "default") {
			usage += " (default " + def + ")"
		}
		_, _ = fmt.Fprintf(w, "%s\n        %s\n", head, strings.ReplaceAll(usage, "\n", "\n        "))
	}
}

// isBoolFlag reports whether f takes no value, like -q.
func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
