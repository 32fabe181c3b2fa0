package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
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
		{[]string{"run", "--ttl", "forever", "k", "true"}, "invalid value"},
		{[]string{"run", "k", "-x"}, "flag provided but not defined: -x"},
		{[]string{"status"}, "missing KEY"},
		{[]string{"status", ""}, "empty KEY"},
		{[]string{"release", "k"}, "missing --token"},
		{[]string{"release", "--token", "t"}, "missing KEY"},
		{[]string{"version", "x"}, `unexpected argument "x"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q on stderr only", tc.args, code, stdout.String(), stderr.String(), exitUsage, tc.want)
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
