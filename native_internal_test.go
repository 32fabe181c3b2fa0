package redislock

import (
	"testing"

	"github.com/redislock/redislock/internal/native"
	"github.com/redislock/redislock/internal/value"
)

// The Lock's value, as native commands compare it, is the one obtain.lua
// writes: "<#token>:<token>:<fence>:<metadata>", the fence "0" or
// "<token>/<tag>".
func TestLockValue(t *testing.T) {
	fenced := &handle{token: "tok", fence: 1796114761349491}
	tag := fenced.args.Fence("{job}:fence").String()
	attached := &handle{token: "tok"}
	attached.matched.Store(&native.Value{}) // as Attach makes it
	for _, c := range []struct {
		h    *handle
		want string
		ok   bool
	}{
		{&handle{token: "tok", metadata: "m:1"}, "3:tok:0:m:1", true},
		{fenced, "3:tok:1796114761349491/" + tag + ":", true},
		{attached, "", false},
	} {
		got := c.h.lockValue()
		if got.V != c.want || got.Known != c.ok {
			t.Errorf("lockValue() = %q, %v, want %q, %v", got.V, got.Known, c.want, c.ok)
		}
	}
	var args value.Args
	if got, want := args.Fence("fence").String(), "212e1d38"; got != want {
		t.Errorf(`Fence("fence") = %q, want %q (echo -n fence | sha1sum)`, got, want)
	}
}
