package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

// TestTLS: "run" and "status" over rediss://, the server not asking for a
// client certificate and the tool trusting the test's CA through
// SSL_CERT_FILE, which Go reads on Unix (TestTLSFlags covers --tls-ca and
// client certificates).
func TestTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.NewTLSServer(t, redistest.Redis, "--tls-auth-clients", "no")
	conn := []string{"--redis", "rediss://" + srv.TLSAddr()}
	trustCA := []string{"SSL_CERT_FILE=" + srv.CAFile()}
	key := redistest.Key(t, "lock")

	env, a := runArgs(conn, nil, key, "hold", "0")
	holder := start(t, append(env, trustCA...), a...)
	held := parseEnvLine(t, holder)
	holder.expect("ready")
	if held.key != key || held.token == "" {
		t.Fatalf("the command's environment = %+v, want key %q and a token", held, key)
	}

	r := redislockCmd(t, trustCA, args("status", conn, "--json", key)...)
	if r.code != 0 {
		t.Fatalf("status --json: exit %d; stderr: %s", r.code, r.stderr)
	}
	var got statusReport
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("status --json output does not parse: %v\n%s", err, r.stdout)
	}
	if len(got.Locks) != 1 || !got.Locks[0].Held || got.Locks[0].Token != held.token {
		t.Errorf("status --json = %+v, want %s held with token %s", got.Locks, key, held.token)
	}

	_ = holder.stdin.Close()
	if code := holder.wait(); code != 0 {
		t.Fatalf("run: exit %d, want 0; stderr: %s", code, holder.stderr)
	}
	if exists(t, srv.Client(t), key) {
		t.Error("run left the lock behind")
	}

	// Without the CA the tool does not trust the server: it says so and
	// fails (exit 69) without running the command.
	env, a = runArgs(conn, nil, key, "exit", "0")
	r = redislockCmd(t, append(env, "SSL_CERT_FILE="+srv.ClientCertFile()), a...)
	if r.code != exitUnavailable || !strings.Contains(r.stderr, "certificate") || r.stdout != "" {
		t.Errorf("run without the CA: exit %d, stdout %q, stderr %q; want %d and a certificate error", r.code, r.stdout, r.stderr, exitUnavailable)
	}

	// A plain-text URL for the TLS port: the server hangs up on the
	// handshake it does not get, and the message says what to try; --tls
	// makes the URL a rediss:// one.
	r = redislockCmd(t, nil, "status", "--redis", "redis://"+srv.TLSAddr(), key)
	if r.code != exitUnavailable || !strings.Contains(r.stderr, "is it TLS? try --tls") {
		t.Errorf("plain text to the TLS port: exit %d, stderr %q; want %d and a hint", r.code, r.stderr, exitUnavailable)
	}
	for _, u := range []string{"redis://" + srv.TLSAddr(), srv.TLSAddr()} {
		r = redislockCmd(t, trustCA, "status", "--tls", "--redis", u, key)
		if r.code != 0 || !strings.Contains(r.stdout, key) {
			t.Errorf("status --tls --redis %s: exit %d, stdout %q, stderr %q; want 0", u, r.code, r.stdout, r.stderr)
		}
	}
	r = redislockCmd(t, trustCA, "status", "--tls", "--redis", "redis://"+srv.Addr()+"?dial_timeout=300ms", key)
	if r.code != exitUnavailable || !strings.Contains(r.stderr, "plain text? drop --tls") {
		t.Errorf("TLS to the plain-text port: exit %d, stderr %q; want %d and a hint", r.code, r.stderr, exitUnavailable)
	}
}
