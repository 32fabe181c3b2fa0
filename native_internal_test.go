package redislock

import "testing"

// Detection of native commands from HELLO, without a server: Redis 8.4 is
// not in the test harness (Debian sid has 8.0), so its row is checked here
// only, against the documented version and reply.
func TestNativesOf(t *testing.T) {
	for _, c := range []struct {
		server, version string
		want            natives
	}{
		{"redis", "6.2.14", nativeKnown},
		{"redis", "7.0.15", nativeKnown},
		{"redis", "8.0.6", nativeKnown},
		{"redis", "8.2.3", nativeKnown},
		{"redis", "8.4.0", nativeKnown | nativeSetIfEq | nativeDelEx},
		{"redis", "9.0.0", nativeKnown | nativeSetIfEq | nativeDelEx},
		{"redis", "10.1.2", nativeKnown | nativeSetIfEq | nativeDelEx},
		{"valkey", "8.0.1", nativeKnown},
		{"valkey", "8.1.0", nativeKnown | nativeSetIfEq},
		{"valkey", "9.0.0", nativeKnown | nativeSetIfEq | nativeDelIfEq},
		{"valkey", "9.1.2", nativeKnown | nativeSetIfEq | nativeDelIfEq},
		{"keydb", "9.9.9", nativeKnown},
		{"", "", nativeKnown},
		{"valkey", "nine", nativeKnown},
		{"valkey", "9", nativeKnown},
		{"valkey", "-9.1.0", nativeKnown},
	} {
		if got := nativesOf(c.server, c.version); got != c.want {
			t.Errorf("nativesOf(%q, %q) = %b, want %b", c.server, c.version, got, c.want)
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

// The Lock's value, as native commands compare it, is the one obtain.lua
// writes: "<#token>:<token>:<fence>:<metadata>", the fence "0" or
// "<token>/<tag>".
func TestLockValue(t *testing.T) {
	fenced := &Lock{token: "tok", fence: 1796114761349491}
	tag := fenced.args.fenceArg("{job}:fence").String()
	for _, c := range []struct {
		lock *Lock
		want string
		ok   bool
	}{
		{&Lock{token: "tok", metadata: "m:1"}, "3:tok:0:m:1", true},
		{fenced, "3:tok:1796114761349491/" + tag + ":", true},
		{&Lock{token: "tok", handover: handOverIfAllowed}, "", false},
	} {
		got, ok := c.lock.lockValue()
		if got != c.want || ok != c.ok {
			t.Errorf("lockValue() = %q, %v, want %q, %v", got, ok, c.want, c.ok)
		}
	}
	var args obtainArgs
	if got, want := args.fenceArg("fence").String(), "212e1d38"; got != want {
		t.Errorf(`fenceArg("fence") = %q, want %q (echo -n fence | sha1sum)`, got, want)
	}
}
