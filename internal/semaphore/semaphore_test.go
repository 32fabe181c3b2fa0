package semaphore

import (
	"testing"
	"time"
)

func TestPermitsKey(t *testing.T) {
	for _, tc := range []struct {
		key, want string
		ok        bool
	}{
		{"{a}:sem", "{a}:sem:redislock:permits", true},
		{"sem", "{sem}:redislock:permits:untagged", true},
		{"s}em", "", false},
	} {
		got, ok := PermitsKey(tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("PermitsKey(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseHolders(t *testing.T) {
	got, ok := ParseHolders([]any{"t1", int64(5), "7:meta", "t2", int64(9), "0:"})
	want := []Holder{{"t1", "meta", 7, 5 * time.Millisecond}, {"t2", "", 0, 9 * time.Millisecond}}
	if !ok || len(got) != len(want) {
		t.Fatalf("ParseHolders = %v, %v; want %v, true", got, ok, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("holder %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got, ok := ParseHolders([]any{}); !ok || got == nil || len(got) != 0 {
		t.Errorf("ParseHolders(empty) = %#v, %v; want an empty slice, true", got, ok)
	}
	for _, bad := range []any{nil, "x", []any{"t"}, []any{"t", "5", "0:"}} {
		if _, ok := ParseHolders(bad); ok {
			t.Errorf("ParseHolders(%#v) ok, want not", bad)
		}
	}
}
