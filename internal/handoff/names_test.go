package handoff

import (
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/keyslot"
)

func TestCompanions(t *testing.T) {
	cases := []struct {
		keys []string
		want []string // the companions: lines, then liveness sets; nil: none possible
	}{
		{[]string{"{job}:lock"}, []string{"{job}:lock:redislock:waiters", "{job}:lock:redislock:alive"}},
		{[]string{"report:daily"}, []string{"{report:daily}:redislock:waiters:untagged", "{report:daily}:redislock:alive:untagged"}},
		// "job" and "{job}" are in one slot, and must not share a line.
		{[]string{"job"}, []string{"{job}:redislock:waiters:untagged", "{job}:redislock:alive:untagged"}},
		{[]string{"{job}"}, []string{"{job}:redislock:waiters", "{job}:redislock:alive"}},
		{[]string{"a{b"}, []string{"{a{b}:redislock:waiters:untagged", "{a{b}:redislock:alive:untagged"}},
		{[]string{"x{y}z"}, []string{"x{y}z:redislock:waiters", "x{y}z:redislock:alive"}},
		{[]string{"{{a}}"}, []string{"{{a}}:redislock:waiters", "{{a}}:redislock:alive"}},
		{[]string{"{j}:a", "{j}:b"}, []string{"{j}:a:redislock:waiters", "{j}:b:redislock:waiters", "{j}:a:redislock:alive", "{j}:b:redislock:alive"}},
		// Hashed whole, with a "}" that would end a tag around them: no
		// companion can share their slot by construction.
		{[]string{"{}x"}, nil},
		{[]string{"x}y"}, nil},
		{[]string{"{j}:a", "b}"}, nil},
	}
	for _, tc := range cases {
		got, ok := Companions(tc.keys)
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
		if g := GrantList(got[n], "id.500"); keyslot.Slot(g) != keyslot.Slot(tc.keys[0]) || !strings.HasPrefix(g, got[n]) {
			t.Errorf("GrantList(%q) = %q: not in the key's slot, or not named after its line", got[n], g)
		}
	}
}

// A waiter id carries its claim window: min(Claim, the TTL), at least 1 ms.
func TestNewID(t *testing.T) {
	for ttl, want := range map[time.Duration]string{
		time.Minute: ".500", 200 * time.Millisecond: ".200", time.Microsecond: ".1", 500 * time.Millisecond: ".500",
	} {
		id := NewID(ttl)
		if !strings.HasSuffix(id, want) || len(id) < len(want)+20 {
			t.Errorf("NewID(%v) = %q, want random text ending with %q", ttl, id, want)
		}
	}
	if a, b := NewID(time.Minute), NewID(time.Minute); a == b {
		t.Errorf("two ids alike: %q", a)
	}
	if id := NewID(time.Minute); strings.Contains(id, "-") {
		t.Errorf("NewID = %q: a process tag (lua/handover.lua's process() reads up to the first -)", id)
	}
	// A waiter of a Registry: its process's tag, "-", random text, and the
	// claim window; the tag has no "-" of its own.
	r := NewRegistry()
	if len(r.process) != 10 || strings.Contains(r.process, "-") {
		t.Fatalf("process tag %q, want 10 characters without -", r.process)
	}
	if other := NewRegistry(); other.process == r.process {
		t.Errorf("two Registries share the tag %q", r.process)
	}
	id := newID(r.process, 200*time.Millisecond)
	tag, rest, ok := strings.Cut(id, "-")
	if !ok || tag != r.process || !strings.HasSuffix(rest, ".200") || len(rest) != 16+len(".200") {
		t.Errorf("newID = %q, want %q, 16 characters of random text, and .200", id, r.process+"-")
	}
	if a, b := newID(r.process, time.Minute), newID(r.process, time.Minute); a == b {
		t.Errorf("two ids alike: %q", a)
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
