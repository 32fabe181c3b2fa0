package replica

import (
	"testing"
	"time"
)

func TestTimeout(t *testing.T) {
	for _, tc := range []struct{ timeout, ttl, want time.Duration }{
		{50 * time.Millisecond, time.Second, 50 * time.Millisecond},
		{0, time.Second, 100 * time.Millisecond},
		{-1, time.Second, 100 * time.Millisecond},
		{0, 5 * time.Millisecond, time.Millisecond},
	} {
		if got := Timeout(tc.timeout, tc.ttl); got != tc.want {
			t.Errorf("Timeout(%v, %v) = %v, want %v", tc.timeout, tc.ttl, got, tc.want)
		}
	}
}
