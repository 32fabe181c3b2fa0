package rwlock

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// replyError is an error reply, as go-redis gives them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

func TestKeys(t *testing.T) {
	for _, tc := range []struct{ name, writer, readers string }{
		{"catalog", "{catalog}:redislock:rw:writer:untagged", "{catalog}:redislock:rw:readers:untagged"},
		{"{job}:catalog", "{job}:catalog:redislock:rw:writer", "{job}:catalog:redislock:rw:readers"},
	} {
		k := Keys(tc.name)
		if k[Writer] != tc.writer || k[Readers] != tc.readers {
			t.Errorf("Keys(%q) W, R = %q, %q; want %q, %q", tc.name, k[Writer], k[Readers], tc.writer, tc.readers)
		}
		for i, key := range k {
			if key == "" {
				t.Errorf("Keys(%q)[%d] is empty", tc.name, i)
			}
		}
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Refusal
	}{
		{nil, NotRefused},
		{errors.New(upgradeReply), NotRefused}, // not a Redis error reply
		{replyError("ERR " + upgradeReply), Upgrade},
		{fmt.Errorf("wrapped: %w", replyError(heldByCallerReply)), HeldByCaller},
		{replyError("NOPERM no"), NotRefused},
	} {
		if got := Refused(tc.err); got != tc.want {
			t.Errorf("Refused(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
