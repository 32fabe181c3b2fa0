package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseRunArgs(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		key     string
		command []string
		ttl     string
	}{
		{args: []string{"k", "--", "ls", "-l"}, key: "k", command: []string{"ls", "-l"}},
		{args: []string{"k", "ls", "-l"}, key: "k", command: []string{"ls", "-l"}},
		{args: []string{"--ttl", "5s", "k", "ls"}, key: "k", command: []string{"ls"}, ttl: "5s"},
		{args: []string{"k", "--ttl", "5s", "--", "ls", "--ttl", "1s"}, key: "k", command: []string{"ls", "--ttl", "1s"}, ttl: "5s"},
		{args: []string{"k", "ls", "--", "x"}, key: "k", command: []string{"ls", "--", "x"}},
		{args: []string{"--", "k", "--", "-x"}, key: "k", command: []string{"-x"}},
		{args: []string{"k"}, key: "k"},
		{args: nil},
	} {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		ttl := fs.String("ttl", "", "")
		key, _, command, _, ok := parseRunArgs(fs, tc.args, io.Discard, io.Discard)
		if !ok || key != tc.key || !slices.Equal(command, tc.command) || *ttl != tc.ttl {
			t.Errorf("parseRunArgs(%q) = %q, %q, ttl %q, ok %v; want %q, %q, ttl %q", tc.args, key, command, *ttl, ok, tc.key, tc.command, tc.ttl)
		}
	}
}

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		pos   []string
		token string
	}{
		{args: []string{"k", "--token", "t"}, pos: []string{"k"}, token: "t"},
		{args: []string{"--token", "t", "a", "b"}, pos: []string{"a", "b"}, token: "t"},
		{args: []string{"a", "--token", "-t", "b"}, pos: []string{"a", "b"}, token: "-t"},
		{args: []string{"a", "--", "--token", "b"}, pos: []string{"a", "--token", "b"}},
	} {
		fs := flag.NewFlagSet("release", flag.ContinueOnError)
		token := fs.String("token", "", "")
		pos, _, ok := parseInterspersed(fs, tc.args, io.Discard, io.Discard)
		if !ok || !slices.Equal(pos, tc.pos) || *token != tc.token {
			t.Errorf("parseInterspersed(%q) = %q, token %q, ok %v; want %q, %q", tc.args, pos, *token, ok, tc.pos, tc.token)
		}
	}
}

// TestUsage: every subcommand has --help with examples, and refuses bad
// arguments with exit 2 and a message, before any connection.
func TestUsage(t *testing.T) {
	for _, sub := range []string{"run", "status", "release", "demo", "version"} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{sub, "--help"}, &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Errorf("%s --help: exit %d; stderr: %s", sub, code, stderr.String())
		}
		wants := []string{"usage: redislock " + sub, "Examples:"}
		if sub == "run" || sub == "status" || sub == "release" {
			wants = append(wants, "--redis", "Exit status", "redis-sentinel://")
		}
		for _, want := range wants {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("%s --help lacks %q", sub, want)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "missing KEY"},
		{[]string{"run", "k"}, "missing COMMAND"},
		{[]string{"run", "--ttl", "10ms", "k", "true"}, "--ttl 10ms is below 100ms"},
		{[]string{"run", "--wait", "-1s", "k", "true"}, "--wait -1s is negative"},
		{[]string{"run", "--grace", "-1s", "k", "true"}, "--grace -1s is negative"},
		{[]string{"run", "--conflict-exit-code", "256", "k", "true"}, "not in 0..255"},
		{[]string{"run", "--ttl", "forever", "k", "true"}, `invalid value "forever" for --ttl: not a duration`},
		{[]string{"run", "k", "-Z"}, "unknown flag -Z"},
		{[]string{"run", "-bogus", "k", "true"}, "unknown flag --bogus"},
		{[]string{"run", "k", "--ttl"}, "--ttl needs a value"},
		{[]string{"run", "--quiet=maybe", "k", "true"}, `invalid value "maybe" for --quiet`},
		{[]string{"status"}, "missing KEY"},
		{[]string{"status", ""}, "empty KEY"},
		{[]string{"release", "k"}, "missing --token"},
		{[]string{"release", "--token", "t"}, "missing KEY"},
		{[]string{"version", "x"}, `unexpected argument "x"`},
		{[]string{"run", "", "--", "true"}, "KEY is empty"},
		{[]string{"run", "--ttl", "5", "k", "true"}, "a duration needs a unit: 5s"},
		{[]string{"run", "--grace", "5", "k", "true"}, "a duration needs a unit"},
		{[]string{"run", "-w", "soon", "k", "true"}, "want seconds (5, 0.5), a duration (30s, 2m) or forever"},
		{[]string{"run", "--grace", "20s", "k", "true"}, "--grace 20s is more than half the --ttl 30s"},
		{[]string{"run", "--ttl", "1s", "--grace", "1s", "k", "true"}, "more than half"},
		{[]string{"run", "-n", "-w", "5", "k", "true"}, "-n (--nonblock) contradicts --wait 5s"},
		{[]string{"run", "k", "-c", "echo hi", "extra"}, "-c gives the whole command"},
		{[]string{"run", "-c", "echo hi"}, "missing KEY"},
		{[]string{"run", "-E", "300", "k", "true"}, "not in 0..255"},
		{[]string{"status", "--bogus", "k"}, "unknown flag --bogus"},
		{[]string{"completion", "fish"}, `unknown shell "fish"`},
		{[]string{"run", "--min-hold", "-1s", "k", "true"}, "--min-hold -1s is negative"},
		{[]string{"run", "--min-hold", "5", "k", "true"}, "a duration needs a unit"},
		{[]string{"run", "--once-per", "-1h", "k", "true"}, "--once-per -1h0m0s is negative"},
		{[]string{"run", "--once-per", "10ms", "k", "true"}, "--once-per 10ms is below 100ms"},
		{[]string{"run", "-s", "--min-hold", "1s", "k", "true"}, "--min-hold cannot be used with --shared"},
		{[]string{"run", "-s", "--once-per", "1h", "k", "true"}, "--once-per takes a lock of its own for each slot"},
		{[]string{"run", "--limit", "2", "--once-per", "1h", "k", "true"}, "--once-per takes a lock of its own for each slot"},
		{[]string{"run", "-w", "5", "--min-hold", "1s", "k", "true"}, "cannot be used with --wait"},
		{[]string{"run", "--wait", "forever", "--once-per", "1h", "k", "true"}, "cannot be used with --wait"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q on stderr only", tc.args, code, stdout.String(), stderr.String(), exitUsage, tc.want)
		}
		// Flags are named as the help names them: -x, --name.
		if strings.Contains(stderr.String(), " -ttl") || strings.Contains(stderr.String(), " -bogus") || strings.Contains(stderr.String(), "flag provided") {
			t.Errorf("%q: stderr = %q names a flag with one dash, or in the flag package's words", tc.args, stderr.String())
		}
		// One line, and where to read more: not the whole help.
		if lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); len(lines) != 2 || lines[1] != "see 'redislock "+tc.args[0]+" --help'" {
			t.Errorf("%q: stderr = %q, want one line and \"see 'redislock %s --help'\"", tc.args, stderr.String(), tc.args[0])
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"nonsense"}, &stdout, &stderr); code != exitUsage || stderr.String() != "redislock: unknown command \"nonsense\"\nsee 'redislock --help'\n" {
		t.Errorf("unknown command: exit %d, stderr %q; want %d and two lines", code, stderr.String(), exitUsage)
	}
	stdout.Reset()
	_ = run(context.Background(), []string{"run", "--help"}, &stdout, &stderr)
	for _, want := range []string{"-w, --wait, --timeout SECONDS", "-n, --nonblock", "-s, --shared", "-e, -x, --exclusive", "-o, --close", "-V, --version", "--keep-credentials", "--tls", "--redis-error-exit-code CODE", "-E, --conflict-exit-code CODE", "-c, --command SHELL-COMMAND", "-q, --quiet", "-v, --verbose", "--password-file FILE", "--tls-ca FILE", "SSL_CERT_FILE", "up to TTL/3 later", "within a second", "--min-hold DURATION", "--once-per PERIOD", "Once per fire"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
	if strings.Contains(stdout.String(), "200 ms") || strings.Contains(stdout.String(), "password=...)") {
		t.Error("run --help still makes the old claims (200 ms, a password= query option)")
	}
}

func TestWaitValue(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		forever bool
		err     bool
	}{
		{in: "5", want: 5 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: ".007", want: 7 * time.Millisecond},
		{in: "0", want: 0},
		{in: "2m", want: 2 * time.Minute},
		{in: "1m30s", want: 90 * time.Second},
		{in: "forever", forever: true},
		{in: "soon", err: true},
		{in: "1e300", err: true},
		{in: "NaN", err: true},
	} {
		var w waitValue
		err := w.Set(tc.in)
		if (err != nil) != tc.err || w.d != tc.want || w.forever != tc.forever {
			t.Errorf("Set(%q) = %v, %+v; want %v, forever %v, error %v", tc.in, err, w, tc.want, tc.forever, tc.err)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, a := range []string{"--version", "version"} {
		r := redislockCmd(t, nil, a)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "redislock ") || !strings.Contains(r.stdout, "go-redis v9") {
			t.Errorf("%s: exit %d, stdout %q; want a version line", a, r.code, r.stdout)
		}
	}
}

// TestUsageAligned: the command list of "redislock --help" starts every
// summary in one column, whatever the length of the names.
func TestUsageAligned(t *testing.T) {
	var stdout bytes.Buffer
	usage(&stdout)
	_, list, ok := strings.Cut(stdout.String(), "Commands:\n")
	if !ok {
		t.Fatalf("no command list in:\n%s", stdout.String())
	}
	list, _, _ = strings.Cut(list, "\n\n")
	column := -1
	for _, l := range strings.Split(list, "\n") {
		name := strings.Fields(l)[0]
		at := strings.Index(l, name) + len(name)
		gap := len(l[at:]) - len(strings.TrimLeft(l[at:], " "))
		if gap < 2 {
			t.Errorf("%q: want at least two spaces after the name", l)
		}
		if column >= 0 && at+gap != column {
			t.Errorf("%q: summary at column %d, want %d as above", l, at+gap, column)
		}
		column = at + gap
	}
}
