package redisreply

import (
	"errors"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		needs bool
		want  Refusal
	}{
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false, WrongType},
		{"ERR Error running script: -WRONGTYPE Operation", false, WrongType},
		{"ERR user_script:1: WRONGTYPE Operation", false, WrongType},
		{"ERR Unknown Redis command called from script", true, TooOld},
		{"ERR Unknown Redis command called from script", false, Other},
		{"ERR wrong number of arguments for 'pexpireat' command", true, TooOld},
		{"NOPERM this user has no permissions", true, Other},
	} {
		if got := Classify(tc.msg, tc.needs); got != tc.want {
			t.Errorf("Classify(%q, %v) = %d, want %d", tc.msg, tc.needs, got, tc.want)
		}
	}
}

func TestExpected(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		i    int
		want string
	}{
		{[]string{"job"}, 0, "string"},
		{[]string{"sem", "sem:redislock:permits"}, 0, "zset"},
		{[]string{"sem", "sem:redislock:permits"}, 1, "hash"},
		{[]string{"job", "job:redislock:waiters"}, 1, "zset"},
		{[]string{"rw:redislock:rw:holds"}, 0, "hash"},
		{[]string{"rw:redislock:rw:readers"}, 0, "zset"},
	} {
		if got := Expected(tc.keys, tc.i); got != tc.want {
			t.Errorf("Expected(%q, %d) = %q, want %q", tc.keys, tc.i, got, tc.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	err := errors.New("WRONGTYPE x")
	if got, want := Describe("", "", "", err), " (WRONGTYPE x)"; got != want {
		t.Errorf("no key: got %q, want %q", got, want)
	}
	got := Describe("job", "zset", "string", err)
	want := `: "job" is a zset (a semaphore's key), where this call keeps a string (a lock's key, an election's or a fence counter)`
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
