package chaos

import (
	"cmp"
	"fmt"
	"slices"
)

// CheckLimit checks the history of a workload on counting semaphores of
// limit permits, whose keys are the events' keys, as [Check] does for
// locks, but for at most limit holders at once: Overlaps counts the
// acquisitions that began while limit others believed (by their local
// validity) that they held a permit of the same key, and
// ObtainedWhileHeld the acquires that ran entirely inside the validity of
// limit others. Every other count means what it does for [Check].
func CheckLimit(events []Event, limit int) Report {
	return check(events, func(c *checker, acqs []*acquisition) { c.limitOverlaps(acqs, limit) })
}

// limitOverlaps is overlaps for a semaphore of limit permits.
func (c *checker) limitOverlaps(acqs []*acquisition, limit int) {
	slices.SortFunc(acqs, func(x, y *acquisition) int { return cmp.Or(compareDur(x.begin, y.begin), cmp.Compare(x.id, y.id)) })
	var active []*acquisition
	for _, b := range acqs {
		active = slices.DeleteFunc(active, func(a *acquisition) bool { return a.end <= b.begin })
		if b.end > b.begin && len(active) >= limit {
			c.r.Overlaps++
			c.report("over limit", fmt.Sprintf("acquisition #%d (client %d, %.4fs..%.4fs) of %q began while %d others believed they held a permit (limit %d)",
				b.id, b.client, b.begin.Seconds(), b.end.Seconds(), b.key, len(active), limit), append(slices.Clone(active), b)...)
		}
		inside := 0
		for _, a := range active {
			if a.begin <= b.obtain.Start && b.obtain.End <= a.end {
				inside++
			}
		}
		if inside >= limit {
			c.r.ObtainedWhileHeld++
			c.report("obtained while held", fmt.Sprintf("acquire of #%d (client %d) ran from %.4fs to %.4fs, entirely inside the validity of %d others (limit %d)",
				b.id, b.client, b.obtain.Start.Seconds(), b.obtain.End.Seconds(), inside, limit), append(slices.Clone(active), b)...)
		}
		if b.end > b.begin {
			active = append(active, b)
		}
	}
}
