package lease

import (
	"errors"
	"testing"
	"time"
)

func TestEndLost(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		end   End
		msg   string
		cause error
	}{
		{End{Reason: NotHeld, Err: boom}, "a refresh found it expired or held by another token", nil},
		{End{Reason: Failed, Err: boom}, "a refresh failed: boom", boom},
		{End{Reason: MaxHoldReached, MaxHold: time.Second},
			"held for MaxHold (1s); it expires at the end of its lease unless released", nil},
		{End{Reason: Expired}, "its lease ran out without a successful refresh", nil},
		{End{Reason: Expired, InFlight: true}, "its lease ran out without a successful refresh (Redis did not answer)", nil},
		{End{Reason: Expired, Err: boom}, "its lease ran out without a successful refresh; last error: boom", boom},
		{End{Reason: SessionLost}, "its session ended: another of its leases could not be refreshed in time", nil},
	}
	for _, tt := range tests {
		msg, cause := tt.end.Lost()
		if msg != tt.msg || cause != tt.cause { //nolint:errorlint // identity is the point
			t.Errorf("%+v.Lost() = %q, %v; want %q, %v", tt.end, msg, cause, tt.msg, tt.cause)
		}
	}
}
