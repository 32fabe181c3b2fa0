package lease

import (
	"errors"
	"testing"
)

func TestReply(t *testing.T) {
	for n, want := range map[int64]error{1: nil, 0: ErrNotHeld, -1: ErrTaken, 2: ErrNotHeld} {
		if got := Reply(n); !errors.Is(got, want) || (want == nil) != (got == nil) {
			t.Errorf("Reply(%d) = %v, want %v", n, got, want)
		}
	}
	if !errors.Is(Reply(-1), ErrNotHeld) {
		t.Error("Reply(-1) does not match ErrNotHeld")
	}
}

func TestEndCause(t *testing.T) {
	for _, c := range []struct {
		e    End
		want Cause
	}{
		{End{Reason: NotHeld}, CauseGone},
		{End{Reason: NotHeld, Err: ErrTaken}, CauseTaken},
		{End{Reason: Expired}, CauseExpired},
		{End{Reason: SessionLost}, CauseExpired},
		{End{Reason: MaxHoldReached}, CauseMaxHold},
		{End{Reason: Failed, Err: errors.New("x")}, CauseError},
	} {
		if got := c.e.Cause(); got != c.want {
			t.Errorf("%v.Cause() = %d, want %d", c.e.Reason, got, c.want)
		}
	}
}
