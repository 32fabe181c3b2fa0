package election

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCannotProclaim(t *testing.T) {
	lost, stopped := errors.New("lost"), errors.New("stopped")
	later, earlier := time.Now().Add(time.Hour), time.Now().Add(-time.Millisecond)
	if err := CannotProclaim(false, nil, later, lost); err != nil {
		t.Errorf("leading: got %v, want nil", err)
	}
	if err := CannotProclaim(true, stopped, later, lost); err == nil || err.Error() != "it resigned" {
		t.Errorf("resigned: got %v, want it resigned", err)
	}
	if err := CannotProclaim(false, stopped, later, lost); err != stopped {
		t.Errorf("ended: got %v, want %v", err, stopped)
	}
	if err := CannotProclaim(false, nil, earlier, lost); !errors.Is(err, lost) {
		t.Errorf("lease ran out: got %v, want one matching %v", err, lost)
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"job", ""},
		{"{job}:x}", ""},
		{"", "empty election name"},
		{"a}b", "without a hash tag"},
	} {
		got := CheckName(tc.name)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDetach(t *testing.T) {
	ctx := context.Background()
	if got, cancel := Detach(ctx, time.Second); got != ctx {
		t.Error("Detach of a live context: got another context")
	} else {
		cancel()
	}
	ended, cancelEnded := context.WithCancel(ctx)
	cancelEnded()
	got, cancel := Detach(ended, time.Second)
	defer cancel()
	if got.Err() != nil {
		t.Errorf("Detach of an ended context: Err = %v, want nil", got.Err())
	}
	if _, ok := got.Deadline(); !ok {
		t.Error("Detach of an ended context: no deadline")
	}
}
