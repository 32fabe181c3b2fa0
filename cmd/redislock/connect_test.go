package main

import (
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		url      string
		cluster  bool
		master   string
		want     string // endpoint.String()
		wantDB   int
		wantPass string // of the data nodes
		wantErr  string
	}{
		{url: "redis://127.0.0.1:6380/2", want: "Redis at 127.0.0.1:6380", wantDB: 2},
		{url: "redis://:secret@example.com", want: "Redis at example.com:6379", wantPass: "secret"},
		{url: "rediss://u:p@example.com:6390?dial_timeout=1s", want: "Redis at example.com:6390", wantPass: "p"},
		{url: "127.0.0.1:7000", want: "Redis at 127.0.0.1:7000"},
		{url: "unix:///run/redis.sock?db=3", want: "Redis at unix:/run/redis.sock", wantDB: 3},
		{url: "redis://[::1]:6380", want: "Redis at [::1]:6380"},

		{url: "redis://a:7000,b:7001,c", cluster: true, want: "Redis Cluster (seeds a:7000,b:7001,c:6379)"},
		{url: "a:7000,b:7001", cluster: true, want: "Redis Cluster (seeds a:7000,b:7001)"},
		{url: "redis://:pw@a:7000?addr=b:7001", cluster: true, want: "Redis Cluster (seeds a:7000,b:7001)", wantPass: "pw"},

		{url: "redis-sentinel://s1,s2:26380/mymaster", want: `Redis master "mymaster" (sentinels s1:26379,s2:26380)`},
		{url: "redis-sentinel://s1/my%20master/4?password=pw", want: `Redis master "my master" (sentinels s1:26379)`, wantDB: 4, wantPass: "pw"},
		{url: "rediss-sentinel://s1:1/m", master: "m", want: `Redis master "m" (sentinels s1:1)`},
		{url: "redis://s1:1,s2:2/1", master: "m", want: `Redis master "m" (sentinels s1:1,s2:2)`, wantDB: 1},
		{url: "s1,s2", master: "m", want: `Redis master "m" (sentinels s1:26379,s2:26379)`},

		{url: "nonsense://x", wantErr: `unsupported URL scheme "nonsense"`},
		{url: "redis://a:1,b:2", wantErr: "lists 2 servers"},
		{url: "redis://a:1", cluster: true, master: "m", wantErr: "--cluster cannot be used with Sentinel"},
		{url: "redis-sentinel://a:1/m", cluster: true, wantErr: "--cluster cannot be used with Sentinel"},
		{url: "unix:///x.sock", cluster: true, wantErr: "unix://"},
		{url: "redis-sentinel://a:1", wantErr: "/master"},
		{url: "redis-sentinel://a:1/m/0/x", wantErr: "/master"},
		{url: "redis-sentinel://a:1/m", master: "other", wantErr: "contradicts"},
		{url: "redis://a,,b", cluster: true, wantErr: "bad host"},
		{url: "redis://", wantErr: "no host"},
		{url: "redis://a:1/x", wantErr: "invalid database number"},
		{url: "redis://a:1?bogus=1", wantErr: "bogus"},
	} {
		e, err := parseEndpoint(tc.url, tc.cluster, tc.master)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseEndpoint(%q, %v, %q) = %v, %v; want an error containing %q", tc.url, tc.cluster, tc.master, e, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseEndpoint(%q, %v, %q): %v", tc.url, tc.cluster, tc.master, err)
			continue
		}
		if got := e.String(); got != tc.want {
			t.Errorf("parseEndpoint(%q, %v, %q) = %s, want %s", tc.url, tc.cluster, tc.master, got, tc.want)
		}
		var db int
		var pass string
		switch {
		case e.single != nil:
			db, pass = e.single.DB, e.single.Password
		case e.failover != nil:
			db, pass = e.failover.DB, e.failover.Password
		case e.cluster != nil:
			pass = e.cluster.Password
		}
		if db != tc.wantDB || pass != tc.wantPass {
			t.Errorf("parseEndpoint(%q): db %d, password %q; want %d, %q", tc.url, db, pass, tc.wantDB, tc.wantPass)
		}
	}
}

func TestEndpointClientDefaults(t *testing.T) {
	e, err := parseEndpoint("redis://127.0.0.1:1?dial_timeout=7s", false, "")
	if err != nil {
		t.Fatal(err)
	}
	c := e.client()
	defer func() { _ = c.Close() }()
	o := c.(interface{ Options() *redis.Options }).Options()
	if o.DialTimeout != 7*time.Second || o.DialerRetries != dialerRetries || o.MaxRetries != maxRetries || !o.ContextTimeoutEnabled {
		t.Errorf("options: dial timeout %v, dialer retries %d, max retries %d, context timeouts %v; want the URL's 7s, then %d, %d, true",
			o.DialTimeout, o.DialerRetries, o.MaxRetries, o.ContextTimeoutEnabled, dialerRetries, maxRetries)
	}
}

func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"redis://a:1", "redis-sentinel://a,b:2/m/1?password=x", "a:1,b:2", "unix:///s", "rediss://u:p@[::1]:1/0", "redis://@,/"} {
		f.Add(s, false, "")
		f.Add(s, true, "")
		f.Add(s, false, "m")
	}
	f.Fuzz(func(t *testing.T, url string, cluster bool, master string) {
		e, err := parseEndpoint(url, cluster, master)
		if err != nil {
			return
		}
		n := 0
		for _, set := range []bool{e.single != nil, e.failover != nil, e.cluster != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("parseEndpoint(%q, %v, %q): %d kinds of options set, want 1", url, cluster, master, n)
		}
		switch {
		case e.cluster != nil:
			if len(e.cluster.Addrs) == 0 || slices.Contains(e.cluster.Addrs, "") {
				t.Fatalf("cluster addrs %q", e.cluster.Addrs)
			}
		case e.failover != nil:
			if e.failover.MasterName == "" || len(e.failover.SentinelAddrs) == 0 {
				t.Fatalf("failover: master %q, sentinels %q", e.failover.MasterName, e.failover.SentinelAddrs)
			}
		}
		_ = e.String()
	})
}

// TestConnectErrors: a URL that does not parse exits 1, a server that does
// not answer 69, at once, with one line naming the problem; conflicting
// flags exit 2.
func TestConnectErrors(t *testing.T) {
	t.Parallel()
	dead := redistest.DeadAddr(t)
	// The silent server counts the connections made to it: one, answered
	// by nothing, is the command giving up at its first timeout.
	var silentConns atomic.Int32
	silent := redistest.ServeTCP(t, func(net.Conn) { silentConns.Add(1) })
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		code int
		want []string
	}{
		{"silent server", []string{"--redis", "redis://" + silent}, nil, exitUnavailable, []string{"cannot reach Redis at " + silent, "no answer within 3s"}},
		{"bad scheme", []string{"--redis", "nonsense://x"}, nil, exitFailure, []string{"--redis", `"nonsense"`}},
		{"bad REDIS_URL", nil, []string{"REDIS_URL=redis://host:1/notadb"}, exitFailure, []string{"REDIS_URL", "database"}},
		{"dead server", []string{"--redis", "redis://" + dead}, nil, exitUnavailable, []string{"cannot reach Redis at " + dead, "refused"}},
		{"dead cluster", []string{"--cluster", "--redis", dead}, nil, exitUnavailable, []string{"cannot reach Redis Cluster", dead}},
		{"dead sentinels", []string{"--redis", "redis-sentinel://" + dead + "/mymaster"}, nil, exitUnavailable, []string{`cannot reach Redis master "mymaster"`, dead}},
		{"cluster and sentinel", []string{"--cluster", "--sentinel-master", "m"}, nil, exitUsage, []string{"--cluster cannot be used with Sentinel"}},
	} {
		for _, sub := range [][]string{{"run", "k", "--", "true"}, {"status", "k"}, {"release", "k", "--token", "t"}} {
			if tc.name == "silent server" && sub[0] != "status" {
				continue // the same code, and three seconds each
			}
			t.Run(tc.name+"/"+sub[0], func(t *testing.T) {
				t.Parallel()
				a := append(append([]string{sub[0]}, tc.args...), sub[1:]...)
				r := redislockCmd(t, tc.env, a...)
				if r.code != tc.code {
					t.Errorf("exit %d, want %d; stderr: %s", r.code, tc.code, r.stderr)
				}
				// No retry: a silent server got one connection (the
				// message names the one timeout that fired).
				if tc.name == "silent server" {
					// The server's accept loop may lag behind the exit.
					for deadline := time.Now().Add(10 * time.Second); silentConns.Load() == 0 && time.Now().Before(deadline); {
						time.Sleep(10 * time.Millisecond)
					}
					if n := silentConns.Load(); n != 1 {
						t.Errorf("%d connections to the silent server, want 1: the command retried", n)
					}
				}
				if r.stdout != "" {
					t.Errorf("stdout = %q, want nothing", r.stdout)
				}
				if !strings.HasPrefix(r.stderr, "redislock "+sub[0]+": ") || strings.Count(r.stderr, "\n") > 2 {
					t.Errorf("stderr = %q, want one line prefixed with the command", r.stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(r.stderr, w) {
						t.Errorf("stderr = %q, want it to contain %q", r.stderr, w)
					}
				}
			})
		}
	}
}

// TestRunWaitRetriesConnection: while "run --wait" waits, a Redis that
// cannot be reached (connections reset, refused: a restart) is tried
// again, and the command runs once Redis answers.
func TestRunWaitRetriesConnection(t *testing.T) {
	t.Parallel()
	srv := redistest.SharedServer(t, redistest.Redis)
	t.Run("reset", func(t *testing.T) {
		t.Parallel()
		// A proxy that drops every connection it accepts until it
		// forwards them: each drop is an attempt of redislock's. On a port
		// the harness keeps from its servers, and listened on throughout
		// (closed and listened on again, the port could be taken by
		// another socket of the machine in between).
		attempts := make(chan struct{}, 100)
		proxy := newDroppingProxy(t, redistest.FreeAddr(t), srv.Addr(), func() {
			select {
			case attempts <- struct{}{}:
			default:
			}
		})
		addr := proxy.Addr()
		key := redistest.Key(t, "lock")
		env, a := runArgs([]string{"--redis", "redis://" + addr}, []string{"--wait", "15s"}, key, "exit", "0")
		p := start(t, env, a...)
		for range 2 {
			select {
			case <-attempts:
			case <-p.exited:
				t.Fatalf("redislock exited %d before Redis was up; stderr: %s", p.wait(), p.stderr)
			case <-time.After(procTimeout):
				t.Fatal("redislock did not try twice")
			}
		}
		proxy.Forward() // Redis comes up at the address
		if got := parseEnvLine(t, p); got.key != key {
			t.Errorf("command's key = %q, want %q", got.key, key)
		}
		if code := p.wait(); code != 0 {
			t.Errorf("exit %d, want 0; stderr: %s", code, p.stderr)
		}
	})
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		addr := redistest.DeadAddr(t)
		key := redistest.Key(t, "lock")
		env, a := runArgs([]string{"--redis", "redis://" + addr}, []string{"--wait", "15s", "-v"}, key, "exit", "0")
		p := start(t, env, a...)
		pollUntil(t, "redislock to retry", func() bool {
			if !p.running() {
				t.Fatalf("redislock exited %d before Redis was up; stderr: %s", p.wait(), p.stderr)
			}
			return strings.Contains(p.stderr.String(), "connection refused); trying again")
		})
		newProxy(t, addr, srv.Addr())
		parseEnvLine(t, p)
		if code := p.wait(); code != 0 {
			t.Errorf("exit %d, want 0; stderr: %s", code, p.stderr)
		}
	})
}

// TestClusterWithoutFlag: a plain redis:// URL that reaches a Cluster
// node, without --cluster, is used as a seed of the Cluster: keys served
// by other nodes work (instead of MOVED or CROSSSLOT errors).
func TestClusterWithoutFlag(t *testing.T) {
	t.Parallel()
	c := redistest.SharedCluster(t, redistest.Redis)
	key := redistest.Key(t, "lock")
	owner := c.MasterForKey(t, key).Addr()
	seed := ""
	for _, n := range c.Nodes() {
		if n.Addr() != owner {
			seed = n.Addr()
			break
		}
	}
	fence := redistest.Tag(t) + ":fence"
	env, a := runArgs([]string{"--redis", "redis://" + seed}, []string{"--fence-key", fence}, key, "exit", "0")
	if r := redislockCmd(t, env, a...); r.code != 0 || !strings.HasPrefix(r.stdout, "env "+key+" ") {
		t.Errorf("run through %s (%s is on %s): exit %d, stdout %q, stderr %q; want 0", seed, key, owner, r.code, r.stdout, r.stderr)
	}
	// A fence key of another slot is refused before anything is sent,
	// with the library's advice, not Redis's CROSSSLOT.
	env, a = runArgs([]string{"--redis", "redis://" + seed}, []string{"--fence-key", "no-tag:fence"}, key, "exit", "0")
	if r := redislockCmd(t, env, a...); r.code != exitUsage || !strings.Contains(r.stderr, "hash tag") || r.stdout != "" {
		t.Errorf("cross-slot fence key: exit %d, stdout %q, stderr %q; want %d and the advice", r.code, r.stdout, r.stderr, exitUsage)
	}
	other := redistest.Key(t, "other")
	if r := redislockCmd(t, nil, "status", "--redis", seed, key, other); r.code != 0 {
		t.Errorf("status through %s: exit %d, stderr %q", seed, r.code, r.stderr)
	}
}

// FuzzRedactedError: the error for a URL that does not parse never shows
// its password, whatever the password and the rest of the URL hold.
func FuzzRedactedError(f *testing.F) {
	for _, s := range [][2]string{{"", "127.0.0.1:notaport"}, {"/x", "h:1"}, {"?a", "h:1/x"}, {"#", "[::1"}, {"@", "h:1,h:2"}, {"%zz", "h:1?bogus=1"}} {
		f.Add(s[0], s[1], false)
	}
	f.Fuzz(func(t *testing.T, pass, rest string, cluster bool) {
		const mark = "S3CRET"
		if strings.Contains(rest, mark) {
			return
		}
		for _, raw := range []string{"redis://:" + mark + pass + "@" + rest, "user:" + mark + pass + "@" + rest, "redis-sentinel://u:" + mark + pass + "@" + rest} {
			if _, err := parseEndpoint(raw, cluster, ""); err == nil {
				continue
			}
			if err := redactedError(raw, cluster, ""); strings.Contains(err.Error(), mark) {
				t.Fatalf("the error for %q shows the password: %v", raw, err)
			}
		}
	})
}
