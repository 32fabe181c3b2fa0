package redislock_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redislock/redislock"
)

func TestHashTag(t *testing.T) {
	job := redislock.HashTag("invoice:42")
	if got, want := job.Key("fence"), "{invoice:42}:fence"; got != want {
		t.Errorf("Key(fence) = %q, want %q", got, want)
	}
	keys := job.Keys("ledger", "pdf")
	if len(keys) != 2 || keys[0] != "{invoice:42}:ledger" || keys[1] != "{invoice:42}:pdf" {
		t.Errorf("Keys(ledger, pdf) = %q", keys)
	}
	if got := job.Keys(); len(got) != 0 {
		t.Errorf("Keys() = %q, want none", got)
	}
	cases := []struct {
		tag  redislock.HashTag
		same bool
	}{
		{"job", true},
		{"a}b", true},   // the tag ends early, at the same place in every key
		{"a{b", true},   // "{" inside the tag is part of it
		{"{job}", true}, // nested braces: the tag is "{job"
		{"", false},     // "{}" is no tag: keys are hashed whole
		{"}x", false},   // likewise
	}
	for _, tc := range cases {
		a, b := redislock.HashSlot(tc.tag.Key("lock")), redislock.HashSlot(tc.tag.Key("fence-counter"))
		if (a == b) != tc.same {
			t.Errorf("HashTag(%q): slots %d and %d, want same=%v", tc.tag, a, b, tc.same)
		}
	}
}

// Every key of a HashTag that is not empty and does not start with "}"
// shares one slot, whatever the names.
func FuzzHashTag(f *testing.F) {
	f.Add("job", "lock", "fence")
	f.Add("a}b", "", "x{y}")
	f.Add("{", "}", "{}")
	f.Fuzz(func(t *testing.T, tag, a, b string) {
		if tag == "" || strings.HasPrefix(tag, "}") {
			return
		}
		h := redislock.HashTag(tag)
		if sa, sb := redislock.HashSlot(h.Key(a)), redislock.HashSlot(h.Key(b)); sa != sb {
			t.Errorf("HashTag(%q): Key(%q) in slot %d, Key(%q) in slot %d", tag, a, sa, b, sb)
		}
	})
}

func ExampleHashTag() {
	job := redislock.HashTag("invoice:42")
	keys, fence := job.Keys("ledger", "pdf"), job.Key("fence")
	fmt.Println(keys, fence)
	// On a Cluster they share a slot, so one script can take them all:
	//	lock, err := locker.ObtainMulti(ctx, keys, ttl, &redislock.Options{FenceKey: fence})
	fmt.Println(redislock.HashSlot(keys[0]) == redislock.HashSlot(fence))

	// Output:
	// [{invoice:42}:ledger {invoice:42}:pdf] {invoice:42}:fence
	// true
}
