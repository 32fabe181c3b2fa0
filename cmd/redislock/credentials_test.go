package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

// TestURLRedacted: no message shows the password of the URL, or a piece
// of it, whether the URL comes from --redis or $REDIS_URL, and whatever
// the password holds.
func TestURLRedacted(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis://:hunter2@127.0.0.1:notaport",
		"redis://user:hunter2@127.0.0.1:1/notadb",
		"redis://:hun/ter2@127.0.0.1:notaport",
		"redis://:hun#ter2@[::1:1",
		"rediss://u:hun%zzter2@127.0.0.1:1?bogus=1",
		"redis-sentinel://:hun/ter2@127.0.0.1:1",
		"redis://:hun@ter2@127.0.0.1:1,127.0.0.1:2",
	} {
		for _, how := range []string{"flag", "env"} {
			t.Run(how+"/"+url, func(t *testing.T) {
				var env, a []string
				if how == "flag" {
					a = []string{"--redis", url}
				} else {
					env = []string{"REDIS_URL=" + url}
				}
				r := redislockCmd(t, env, append(append([]string{"status"}, a...), "k")...)
				if r.code == 0 || r.stderr == "" {
					t.Fatalf("exit %d, stderr %q; want a failure", r.code, r.stderr)
				}
				for _, secret := range []string{"hunter2", "hun", "ter2"} {
					if strings.Contains(r.stderr, secret) {
						t.Errorf("stderr = %q: it shows %q", r.stderr, secret)
					}
				}
			})
		}
	}
}

// TestPassword: the password from the URL (holding "/", "#", "@" and
// ":"), --password-file, $REDIS_PASSWORD or $REDISCLI_AUTH; without one,
// redislock says that authentication failed.
func TestPassword(t *testing.T) {
	t.Parallel()
	const password = "pa/ss#w@rd:x" //nolint:gosec // a test server's
	srv := redistest.NewServer(t, redistest.Redis)
	if err := srv.Client(t).ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(file, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("wrong\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := []string{"--redis", "redis://" + srv.Addr()}
	for _, tc := range []struct {
		name string
		conn []string
		env  []string
		code int
		want string // on stderr
	}{
		{name: "url", conn: []string{"--redis", "redis://:" + password + "@" + srv.Addr()}},
		{name: "url-escaped", conn: []string{"--redis", "redis://:pa%2Fss%23w%40rd%3Ax@" + srv.Addr()}},
		{name: "file", conn: append([]string{"--password-file", file}, plain...)},
		{name: "REDIS_PASSWORD", conn: plain, env: []string{"REDIS_PASSWORD=" + password}},
		{name: "REDISCLI_AUTH", conn: plain, env: []string{"REDISCLI_AUTH=" + password}},
		{name: "url-beats-env", conn: []string{"--redis", "redis://:" + password + "@" + srv.Addr()}, env: []string{"REDIS_PASSWORD=wrong"}},
		{name: "none", conn: plain, code: exitUnavailable, want: "authentication failed at Redis at " + srv.Addr()},
		{name: "wrong", conn: append([]string{"--password-file", wrong}, plain...), code: exitUnavailable, want: "authentication failed"},
		{name: "file-and-url", conn: []string{"--password-file", file, "--redis", "redis://:x@" + srv.Addr()}, code: exitUsage, want: "give one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := redistest.Key(t, "lock")
			env, a := runArgs(tc.conn, nil, key, "exit", "0")
			r := redislockCmd(t, append(env, tc.env...), a...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.want)
			}
			if strings.Contains(r.stderr, "pa/ss") || strings.Contains(r.stderr, "w@rd") {
				t.Errorf("stderr = %q shows the password", r.stderr)
			}
		})
	}
}

// TestTLSFlags: a server that asks for client certificates (Redis's
// default), reached with --tls-ca, --tls-cert and --tls-key; without the
// client certificate it refuses; --tls-insecure skips verifying the
// server; the flags need a rediss:// URL.
func TestTLSFlags(t *testing.T) {
	t.Parallel()
	srv := redistest.NewTLSServer(t, redistest.Redis)
	conn := []string{"--redis", "rediss://" + srv.TLSAddr()}
	cert := []string{"--tls-cert", srv.ClientCertFile(), "--tls-key", srv.ClientKeyFile()}
	for _, tc := range []struct {
		name  string
		conn  []string // instead of conn, when set
		flags []string
		code  int
		want  string
	}{
		{name: "ca-and-cert", flags: append([]string{"--tls-ca", srv.CAFile()}, cert...)},
		{name: "insecure", flags: append([]string{"--tls-insecure"}, cert...)},
		{name: "no-client-cert", flags: []string{"--tls-ca", srv.CAFile()}, code: exitUnavailable, want: "cannot reach"},
		{name: "untrusted", flags: cert, code: exitUnavailable, want: "certificate"},
		{name: "cert-without-key", flags: []string{"--tls-cert", srv.ClientCertFile()}, code: exitUsage, want: "go together"},
		{name: "not-rediss", conn: []string{"--redis", "redis://" + srv.TLSAddr()}, flags: append([]string{"--tls-ca", srv.CAFile()}, cert...), code: exitUsage, want: "rediss://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := redistest.Key(t, "lock")
			c := conn
			if tc.conn != nil {
				c = tc.conn
			}
			env, a := runArgs(append(append([]string{}, c...), tc.flags...), nil, key, "exit", "0")
			r := redislockCmd(t, env, a...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.want)
			}
			if tc.code == 0 && !strings.HasPrefix(r.stdout, "env "+key+" ") {
				t.Errorf("stdout = %q, want the command's env line", r.stdout)
			}
		})
	}
}

// TestRunCredentialsNotPassed: the command does not inherit the password
// that redislock was given through its environment ($REDIS_PASSWORD,
// $REDISCLI_AUTH, a $REDIS_URL that holds one); --keep-credentials passes
// them on. A $REDIS_URL without a password is passed on.
func TestRunCredentialsNotPassed(t *testing.T) {
	t.Parallel()
	const password = "s3cret-pw" //nolint:gosec // a test server's
	srv := redistest.NewServer(t, redistest.Redis)
	if err := srv.Client(t).ConfigSet(context.Background(), "requirepass", password).Err(); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"REDIS_PASSWORD=" + password, "REDISCLI_AUTH=" + password, "REDIS_URL=redis://:" + password + "@" + srv.Addr()}
	for _, tc := range []struct {
		name  string
		env   []string
		flags []string
		want  []string // variables the command must see
		not   []string // names it must not see
	}{
		{name: "removed", env: secrets, not: []string{"REDIS_PASSWORD=", "REDISCLI_AUTH=", "REDIS_URL="}},
		{name: "kept", env: secrets, flags: []string{"--keep-credentials"}, want: secrets},
		{name: "url-without-password", env: []string{"REDIS_URL=redis://" + srv.Addr(), "REDISCLI_AUTH=" + password},
			want: []string{"REDIS_URL=redis://" + srv.Addr()}, not: []string{"REDISCLI_AUTH="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := redistest.Key(t, "lock")
			a := append(append([]string{"run"}, tc.flags...), key, "--", "env")
			r := redislockCmd(t, tc.env, a...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr: %s", r.code, r.stderr)
			}
			lines := strings.Split(r.stdout, "\n")
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("the command's environment lacks %s", w)
				}
			}
			for _, n := range tc.not {
				for _, l := range lines {
					if strings.HasPrefix(l, n) {
						t.Errorf("the command's environment has %s", l)
					}
				}
			}
			if len(tc.want) == 0 && strings.Contains(r.stdout, password) {
				t.Errorf("the command's environment shows the password:\n%s", r.stdout)
			}
		})
	}
}

func TestURLHasPassword(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"redis://127.0.0.1:6379", false},
		{"redis://127.0.0.1:6379/2?dial_timeout=3s", false},
		{"127.0.0.1:6379", false},
		{"redis://:pw@127.0.0.1:6379", true},
		{"redis://user:pw@127.0.0.1:6379", true},
		{"rediss://pw@host", true},
		{":pw@host:1", true},
		{"redis-sentinel://s1,s2/master?password=pw", true},
		{"redis-sentinel://s1/master?sentinel_password=pw", true},
		{"redis://:pa/ss#w@rd@host", true},
		{"unix:///run/redis.sock?db=1", false},
	} {
		if got := urlHasPassword(tc.url); got != tc.want {
			t.Errorf("urlHasPassword(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}
