package handoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

// aclError is an error reply, as go-redis gives them.
type aclError string

func (e aclError) Error() string { return string(e) }
func (aclError) RedisError()     {}

func TestDeniedByACL(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{aclError("NOPERM this user has no permissions to access one of the keys"), true},
		{aclError("ERR The user executing the script can't run this command or subcommand"), true},
		{aclError("ERR user default has no permissions to run the 'blpop' command"), true},
		{aclError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{errors.New("NOPERM but not a reply"), false},
	} {
		if got := DeniedByACL(tc.err); got != tc.want {
			t.Errorf("DeniedByACL(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestReleaseKeys(t *testing.T) {
	given := []string{"a", "b", "c"}
	if got, ok := ReleaseKeys(given, []string{"x"}); !ok || len(got) != 3 || got[0] != "a" {
		t.Errorf("ReleaseKeys(given) = %v, %v; want the given ones", got, ok)
	}
	if got, ok := ReleaseKeys(nil, []string{"{job}"}); !ok || len(got) != 3 || got[0] != "{job}" {
		t.Errorf("ReleaseKeys(nil, {job}) = %v, %v; want the key and its companions", got, ok)
	}
	if _, ok := ReleaseKeys(nil, []string{"a}b"}); ok {
		t.Error(`ReleaseKeys(nil, "a}b"): ok, want not ok`)
	}
}

func TestFailed(t *testing.T) {
	notObtained, unexpected := errors.New("not obtained"), errors.New("unexpected")
	released := false
	release := func(ctx context.Context) {
		released = ctx.Err() == nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Failed(ctx, Outcome{Obtained: true}, &EndedError{context.Canceled}, nil, notObtained, unexpected, time.Second, release)
	if !errors.Is(err, notObtained) || !errors.Is(err, context.Canceled) || !released {
		t.Errorf("ended: got %v (released %v), want both errors and a release", err, released)
	}
	if err := Failed(ctx, Outcome{}, ErrGaveUp, nil, notObtained, unexpected, time.Second, nil); err != notObtained {
		t.Errorf("gave up: got %v, want %v", err, notObtained)
	}
	err = Failed(ctx, Outcome{}, ErrUnexpectedReply, []string{"k"}, notObtained, unexpected, time.Second, nil)
	if !errors.Is(err, unexpected) || !errors.Is(err, ErrUnexpectedReply) {
		t.Errorf("unexpected reply: got %v, want one matching %v", err, unexpected)
	}
	other := errors.New("other")
	if err := Failed(ctx, Outcome{}, other, nil, notObtained, unexpected, time.Second, nil); err != other {
		t.Errorf("other: got %v, want %v", err, other)
	}
}
