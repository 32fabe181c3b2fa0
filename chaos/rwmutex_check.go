package chaos

import (
	"fmt"
	"slices"
)

// CheckRW checks the history of a read-write lock workload
// ([redislock.RWMutex]): reads names the acquisitions (Acq of their
// obtain events) that are read holds; every other acquisition is a write
// lock. Read holds may overlap one another; a write lock may overlap
// nothing. Overlaps and ObtainedWhileHeld count the pairs in which a write
// lock is one side (by the holders' local validity, as [Check] computes
// it); TokenOrder and the store's counts concern write locks only, whose
// fence tokens must increase (a read hold carries the token of the last
// write, so equal tokens among reads are expected). LostEarly counts both
// kinds. It never fails: the caller decides which counts must be zero.
func CheckRW(events []Event, reads map[int]bool) Report {
	// The write locks alone: Check computes everything but the
	// read/write overlaps.
	var writeEvents []Event
	for _, e := range events {
		if e.Acq == 0 || !reads[e.Acq] {
			writeEvents = append(writeEvents, e)
		}
	}
	r := Check(writeEvents)

	// The read holds' validity, and each write lock's again, to compare.
	var faults []Event
	acqs := map[int]*acquisition{}
	for _, e := range events {
		switch {
		case e.Op == OpFault:
			faults = append(faults, e)
		case e.Op == OpObtain && e.Result == OK:
			acqs[e.Acq] = &acquisition{id: e.Acq, client: e.Client, key: e.Key, obtain: e, token: e.Token, begin: e.End}
			if reads[e.Acq] {
				r.Ops++
				r.Obtains++
			}
		case e.Op == OpObtain:
		case e.Acq != 0 && reads[e.Acq]:
			if e.Op != OpKeepAlive {
				r.Ops++
			}
			if e.Result == Failed {
				r.Failed++
			}
		}
	}
	for _, e := range events {
		if e.Acq == 0 || e.Op == OpObtain || e.Op == OpFault {
			continue
		}
		if a := acqs[e.Acq]; a != nil {
			a.events = append(a.events, e)
		}
	}
	// Validity of every acquisition; only the reads' early losses are
	// added, since Check counted the writes'.
	var readReport, writeReport Report
	c := checker{faults: faults, acqs: acqs}
	byKey := map[string][]*acquisition{}
	for _, a := range acqs {
		c.r = &writeReport
		if reads[a.id] {
			c.r = &readReport
		}
		c.validity(a)
		byKey[a.key] = append(byKey[a.key], a)
	}
	r.LostEarly += readReport.LostEarly
	r.Violations = append(r.Violations, readReport.Violations...)

	c.r = &r
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c.rwOverlaps(byKey[k], reads)
	}
	return r
}

// rwOverlaps counts the pairs of a read hold and a write lock of one key
// whose belief intervals intersect (write/write pairs are [Check]'s), and
// obtains of either that ran inside the other's validity.
func (c *checker) rwOverlaps(acqs []*acquisition, reads map[int]bool) {
	for _, w := range acqs {
		if reads[w.id] || w.end <= w.begin {
			continue
		}
		for _, b := range acqs {
			if !reads[b.id] || b.end <= b.begin {
				continue
			}
			if w.begin < b.end && b.begin < w.end {
				c.r.Overlaps++
				c.report("overlap", fmt.Sprintf("write #%d (client %d, %.4fs..%.4fs) and read #%d (client %d, %.4fs..%.4fs) both believed they held %q",
					w.id, w.client, w.begin.Seconds(), w.end.Seconds(), b.id, b.client, b.begin.Seconds(), b.end.Seconds(), b.key), w, b)
			}
			if (w.begin <= b.obtain.Start && b.obtain.End <= w.end) || (b.begin <= w.obtain.Start && w.obtain.End <= b.end) {
				c.r.ObtainedWhileHeld++
				c.report("obtained while held", fmt.Sprintf("write #%d and read #%d: one's obtain ran entirely inside the other's validity", w.id, b.id), w, b)
			}
		}
	}
}
