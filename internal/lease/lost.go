package lease

import (
	"errors"
	"fmt"
	"strings"
)

// Lost says, for a keep-alive that ended as e other than Stopped, what
// happened to the lock (the text after "lock lost: ") and the error that
// caused it, if any: Failed's refresh error, or the last refresh error of
// one that ran out. NotHeld and MaxHoldReached have no cause of their own.
func (e End) Lost() (msg string, cause error) {
	switch e.Reason {
	case NotHeld:
		return "a refresh found it expired or held by another token", nil
	case Failed:
		return "a refresh failed: " + e.Err.Error(), e.Err
	case MaxHoldReached:
		return fmt.Sprintf("held for MaxHold (%v); it expires at the end of its lease unless released", e.MaxHold), nil
	}
	msg = "its lease ran out without a successful refresh"
	if e.Reason == SessionLost {
		msg = "its session ended: another of its leases could not be refreshed in time"
	}
	switch {
	case e.Err != nil:
		return msg + "; last error: " + e.Err.Error(), e.Err
	case e.InFlight:
		return msg + " (Redis did not answer)", nil
	}
	return msg, nil
}

// Unheld says why err, from [Lease.KeepAlive], means that no lease of the
// handle is known to be valid now: released, never known, or run out.
func Unheld(err error) (why string, ok bool) {
	switch {
	case errors.Is(err, ErrReleased):
		return "the lock was released", true
	case errors.Is(err, ErrUnknown):
		return "no lease of this handle is known (refresh an attached lock first)", true
	case errors.Is(err, ErrExpired):
		return "its lease " + strings.TrimPrefix(err.Error(), "lease: ") + " (refresh it first)", true
	}
	return "", false
}
