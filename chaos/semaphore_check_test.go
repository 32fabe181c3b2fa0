package chaos

import "testing"

// Three holders at once are within a limit of 3 and over a limit of 2; the
// lock checker counts their pairs as overlaps.
func TestCheckLimit(t *testing.T) {
	events := []Event{
		obtained(1, 1, 0, 1*ms, 100*ms, 1),
		obtained(2, 2, 2*ms, 3*ms, 100*ms, 2),
		obtained(3, 3, 10*ms, 11*ms, 100*ms, 3),
		released(1, 1, 50*ms, 51*ms),
		released(2, 2, 50*ms, 51*ms),
		released(3, 3, 50*ms, 51*ms),
		// After the releases, two at once again.
		obtained(1, 4, 60*ms, 61*ms, 100*ms, 4),
		obtained(2, 5, 62*ms, 63*ms, 100*ms, 5),
	}
	for _, tc := range []struct{ limit, overlaps, inside int }{{3, 0, 0}, {2, 1, 1}, {1, 3, 3}} {
		r := CheckLimit(events, tc.limit)
		if r.Overlaps != tc.overlaps || r.ObtainedWhileHeld != tc.inside || r.Obtains != 5 {
			t.Errorf("limit %d: %d over the limit, %d obtained while held, %d obtains; want %d, %d, 5",
				tc.limit, r.Overlaps, r.ObtainedWhileHeld, r.Obtains, tc.overlaps, tc.inside)
		}
		if tc.overlaps > 0 && (len(r.Violations) == 0 || r.Violations[0].Kind != "over limit") {
			t.Errorf("limit %d: violations %v, want an over-limit one first", tc.limit, r.Violations)
		}
	}
	if r := Check(events); r.Overlaps != 4 {
		t.Errorf("Check: %d overlaps, want 4 (pairs)", r.Overlaps)
	}
}
