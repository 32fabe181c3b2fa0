package chaos

import (
	"testing"
	"time"
)

func TestCheckRW(t *testing.T) {
	ms := time.Millisecond
	// Two reads overlap (fine); a write overlaps the second read (not).
	events := []Event{
		obtained(1, 1, 0, 1*ms, 100*ms, 5),
		obtained(2, 2, 10*ms, 11*ms, 100*ms, 5),
		released(1, 1, 50*ms, 51*ms),
		obtained(3, 3, 60*ms, 61*ms, 100*ms, 7),
		wrote(3, 3, 62*ms, 7, 1, OK),
		released(2, 2, 90*ms, 91*ms),
		released(3, 3, 120*ms, 121*ms),
		// A later write with a lower token is a token-order violation.
		obtained(1, 4, 200*ms, 201*ms, 100*ms, 6),
		released(1, 4, 210*ms, 211*ms),
	}
	reads := map[int]bool{1: true, 2: true}
	r := CheckRW(events, reads)
	if r.Overlaps != 1 {
		t.Errorf("Overlaps = %d, want 1 (the write and the second read)", r.Overlaps)
	}
	if r.TokenOrder != 1 {
		t.Errorf("TokenOrder = %d, want 1", r.TokenOrder)
	}
	if r.Obtains != 4 {
		t.Errorf("Obtains = %d, want 4", r.Obtains)
	}
	if r := Check(events); r.Overlaps < 2 {
		t.Errorf("plain Check counts %d overlaps; the read/read one should be among them", r.Overlaps)
	}
}
