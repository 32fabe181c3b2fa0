package election

import (
	"context"
	"errors"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name, term, channel string
		ok                  bool
	}{
		{"{job}:x", "{job}:x:redislock:term", "{job}:x:redislock:leader", true},
		{"job", "{job}:redislock:term:untagged", "{job}:redislock:leader:untagged", true},
		{"jo}b", "", "", false},
	} {
		term, channel, ok := Names(tc.name)
		if term != tc.term || channel != tc.channel || ok != tc.ok {
			t.Errorf("Names(%q) = %q, %q, %v; want %q, %q, %v", tc.name, term, channel, ok, tc.term, tc.channel, tc.ok)
		}
	}
}

// replyError is an error reply, as go-redis gives them: not transient.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestAttempt(t *testing.T) {
	notObtained := errors.New("not obtained")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	var other error = replyError("NOPERM no permissions")
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		err       error
		again     bool
		abandoned bool
		matches   []error
	}{
		{"obtained", context.Background(), nil, false, false, nil},
		{"round over", context.Background(), notObtained, true, false, nil},
		{"final error", context.Background(), other, false, true, []error{other}},
		{"ctx ended", cancelled, other, false, true, []error{notObtained, context.Canceled}},
	} {
		abandoned := false
		again, err := Attempt(tc.ctx, notObtained, func(context.Context) error { return tc.err }, func() { abandoned = true })
		if again != tc.again || abandoned != tc.abandoned || (err == nil) != (tc.matches == nil) {
			t.Errorf("%s: again %v, abandoned %v, err %v; want %v, %v, matching %v", tc.name, again, abandoned, err, tc.again, tc.abandoned, tc.matches)
		}
		for _, m := range tc.matches {
			if !errors.Is(err, m) {
				t.Errorf("%s: err %v does not match %v", tc.name, err, m)
			}
		}
	}
}
