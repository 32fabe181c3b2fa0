package native

import "testing"

// Detection of native commands from HELLO, without a server: Redis 8.4 is
// not in the test harness (Debian sid has 8.0), so its row is checked here
// only, against the documented version and reply.
func TestNativesOf(t *testing.T) {
	for _, c := range []struct {
		server, version string
		want            Set
	}{
		{"redis", "6.2.14", Known},
		{"redis", "7.0.15", Known},
		{"redis", "8.0.6", Known},
		{"redis", "8.2.3", Known},
		{"redis", "8.4.0", Known | SetIfEq | DelEx},
		{"redis", "9.0.0", Known | SetIfEq | DelEx},
		{"redis", "10.1.2", Known | SetIfEq | DelEx},
		{"valkey", "8.0.1", Known},
		{"valkey", "8.1.0", Known | SetIfEq},
		{"valkey", "9.0.0", Known | SetIfEq | DelIfEq},
		{"valkey", "9.1.2", Known | SetIfEq | DelIfEq},
		{"keydb", "9.9.9", Known},
		{"", "", Known},
		{"valkey", "nine", Known},
		{"valkey", "9", Known},
		{"valkey", "-9.1.0", Known},
	} {
		if got := Of(c.server, c.version); got != c.want {
			t.Errorf("Of(%q, %q) = %b, want %b", c.server, c.version, got, c.want)
		}
	}
}

// HELLO's reply is a map in RESP3 and a flat list in RESP2 (as go-redis
// gives them); Redis 8.4 answers as Redis 7 does, with its version.
func TestHelloFields(t *testing.T) {
	for _, c := range []struct {
		name            string
		reply           any
		server, version string
	}{
		{"resp3 valkey", map[any]any{"server": "valkey", "version": "9.1.2", "proto": int64(3), "modules": []any{}}, "valkey", "9.1.2"},
		{"resp3 redis 8.4", map[any]any{"server": "redis", "version": "8.4.0", "proto": int64(3), "mode": "cluster"}, "redis", "8.4.0"},
		{"resp2 redis", []any{"server", "redis", "version", "7.0.15", "proto", int64(2)}, "redis", "7.0.15"},
		{"resp2 odd", []any{"server", "redis", "version"}, "redis", ""},
		{"not a reply", "OK", "", ""},
		{"wrong types", map[any]any{"server": int64(1), "version": []any{}}, "", ""},
	} {
		server, version := helloFields(c.reply)
		if server != c.server || version != c.version {
			t.Errorf("%s: helloFields = %q, %q, want %q, %q", c.name, server, version, c.server, c.version)
		}
	}
}
