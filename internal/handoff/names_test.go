package handoff

import (
	"slices"
	"strings"
	"testing"

	"github.com/redislock/redislock/internal/keyslot"
)

func TestCompanions(t *testing.T) {
	cases := []struct {
		keys []string
		want []string // the companions: queues, then wake-up lists; nil: none possible
	}{
		{[]string{"{job}:lock"}, []string{"{job}:lock:redislock:waiters", "{job}:lock:redislock:wake"}},
		{[]string{"report:daily"}, []string{"{report:daily}:redislock:waiters:untagged", "{report:daily}:redislock:wake:untagged"}},
		// "job" and "{job}" are in one slot, and must not share a queue.
		{[]string{"job"}, []string{"{job}:redislock:waiters:untagged", "{job}:redislock:wake:untagged"}},
		{[]string{"{job}"}, []string{"{job}:redislock:waiters", "{job}:redislock:wake"}},
		{[]string{"a{b"}, []string{"{a{b}:redislock:waiters:untagged", "{a{b}:redislock:wake:untagged"}},
		{[]string{"x{y}z"}, []string{"x{y}z:redislock:waiters", "x{y}z:redislock:wake"}},
		{[]string{"{{a}}"}, []string{"{{a}}:redislock:waiters", "{{a}}:redislock:wake"}},
		{[]string{"{j}:a", "{j}:b"}, []string{"{j}:a:redislock:waiters", "{j}:b:redislock:waiters", "{j}:a:redislock:wake", "{j}:b:redislock:wake"}},
		// Hashed whole, with a "}" that would end a tag around them: no
		// companion can share their slot by construction.
		{[]string{"{}x"}, nil},
		{[]string{"x}y"}, nil},
		{[]string{"{j}:a", "b}"}, nil},
	}
	for _, tc := range cases {
		got, ok := Companions(tc.keys)
		// The wait names companions and grant list in one allocation.
		c, g, nok := names(tc.keys, "w1")
		if wantG, _ := GrantList(tc.keys[0], "w1"); nok != ok || (ok && (!slices.Equal(c, got) || g != wantG)) {
			t.Errorf("names(%q) = %q, %q, %v; want %q, %q, %v", tc.keys, c, g, nok, got, wantG, ok)
		}
		if !ok {
			if tc.want != nil {
				t.Errorf("Companions(%q): none, want %q", tc.keys, tc.want)
			}
			continue
		}
		if tc.want == nil {
			t.Errorf("Companions(%q) = %q, want none", tc.keys, got)
			continue
		}
		n := len(tc.keys)
		if strings.Join(got[:n], ",") != strings.Join(tc.keys, ",") || strings.Join(got[n:], ",") != strings.Join(tc.want, ",") {
			t.Errorf("Companions(%q) = %q, want the keys then %q", tc.keys, got, tc.want)
		}
		for i, k := range got[n:] {
			if lock := tc.keys[i%n]; keyslot.Slot(k) != keyslot.Slot(lock) {
				t.Errorf("%q is in slot %d, its lock key %q in %d", k, keyslot.Slot(k), lock, keyslot.Slot(lock))
			}
		}
		if g, ok := GrantList(tc.keys[0], "id"); !ok || keyslot.Slot(g) != keyslot.Slot(tc.keys[0]) {
			t.Errorf("GrantList(%q) = %q, %t: not in the key's slot", tc.keys[0], g, ok)
		}
	}
}

// No two lock keys share a companion, however their braces fall.
func FuzzCompanionsDistinct(f *testing.F) {
	for _, s := range []string{"job", "{job}", "{job}:redislock:waiters", "a{b", "{a}b", "{{a}}", "x:untagged"} {
		f.Add(s, "{"+s+"}")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b {
			return
		}
		ca, okA := Companions([]string{a})
		cb, okB := Companions([]string{b})
		if !okA || !okB {
			return
		}
		names := map[string]string{}
		for _, c := range []struct{ key, name string }{{a, ca[1]}, {a, ca[2]}, {b, cb[1]}, {b, cb[2]}} {
			if other, dup := names[c.name]; dup {
				t.Fatalf("%q and %q share the companion %q", other, c.key, c.name)
			}
			names[c.name] = c.key
		}
	})
}
