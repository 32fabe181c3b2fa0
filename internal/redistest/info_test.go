package redistest

import (
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		fields map[string]string
		want   Version
		ok     bool
	}{
		{map[string]string{"redis_version": "7.0.15"}, Version{"redis", 7, 0, 15}, true},
		{map[string]string{"redis_version": "7.2.4", "valkey_version": "9.1.2", "server_name": "valkey"}, Version{"valkey", 9, 1, 2}, true},
		{map[string]string{"redis_version": "8.0"}, Version{}, false},
		{map[string]string{"redis_version": "8.x.1"}, Version{}, false},
		{map[string]string{}, Version{}, false},
	} {
		got, err := parseVersion(tc.fields)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("parseVersion(%v) = %v, %v; want %v, ok=%v", tc.fields, got, err, tc.want, tc.ok)
		}
	}
	v := Version{"valkey", 9, 1, 2}
	for _, tc := range []struct {
		major, minor int
		want         bool
	}{{9, 1, true}, {9, 0, true}, {8, 9, true}, {9, 2, false}, {10, 0, false}} {
		if got := v.AtLeast(tc.major, tc.minor); got != tc.want {
			t.Errorf("%v.AtLeast(%d, %d) = %v, want %v", v, tc.major, tc.minor, got, tc.want)
		}
	}
	if got, want := v.String(), "valkey 9.1.2"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	s := SharedServer(t, Valkey)
	c := s.Client(t)
	if got := Info(t, c, "replication", "role"); got != "master" {
		t.Errorf("Info(replication, role) = %q, want master", got)
	}
	if got := Info(t, c, "server", "tcp_port"); got != strconv.Itoa(s.Port()) {
		t.Errorf("Info(server, tcp_port) = %q, want %d", got, s.Port())
	}
	if got := Info(t, c, "replication", "no_such_field"); got != "" {
		t.Errorf("Info(replication, no_such_field) = %q, want \"\"", got)
	}
	if got := ServerVersion(t, c); got.Server != "valkey" || got.Major != 8 {
		t.Errorf("ServerVersion = %v, want valkey 8.x", got)
	}

	ft := &fakeTB{TB: t}
	dead := redis.NewClient(adminOptions(DeadAddr(t)))
	defer func() { _ = dead.Close() }()
	ft.run(func() { Info(ft, dead, "server", "redis_version") })
	if !ft.failed {
		t.Errorf("Info on a dead address did not fail the test")
	}
}
