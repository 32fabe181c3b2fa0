package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is what [Check] found in a history.
type Report struct {
	Ops     int // client calls and writes recorded (keep-alive reports are not calls)
	Obtains int // obtains that returned a lock (acquisitions)
	// Failed counts calls whose outcome was unknown (timeouts, resets, …),
	// and keep-alives that ended because their validity ran out without a
	// successful refresh (their refreshes failed so).
	Failed int

	// Overlaps counts pairs of acquisitions of one key whose holders both
	// believed, by their local validity, that they held it at once.
	Overlaps int
	// ObtainedWhileHeld counts obtains that returned a lock although the
	// whole call ran inside another holder's validity.
	ObtainedWhileHeld int
	// LostEarly counts refreshes and releases that found the lock gone
	// although they completed inside the holder's validity: locks lost.
	LostEarly int
	// TokenOrder counts acquisitions whose fence token is not above that of
	// an acquisition of the same key that ended before it began.
	TokenOrder int
	// StaleAccepted counts writes the store accepted with a token lower than
	// one it had accepted before. Always a bug.
	StaleAccepted int
	// StaleRefused counts writes the store refused (a lower token than one
	// already accepted): fencing at work.
	StaleRefused int
	// HonestRefused counts refused writes made inside the writer's validity.
	HonestRefused int

	// Violations holds the first few findings of each kind above (other
	// than StaleRefused), each with the events that show it.
	Violations []Violation
}

// Violation is one finding of [Check], with the minimal history that shows
// it: the events of the acquisitions involved and the fault events of that
// time span.
type Violation struct {
	Kind   string
	What   string
	Events []Event
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", v.Kind, v.What)
	for _, e := range v.Events {
		fmt.Fprintf(&b, "    %s\n", e)
	}
	return b.String()
}

// Add adds the counts of o to r, keeping the violations of both.
func (r *Report) Add(o Report) {
	r.Ops += o.Ops
	r.Obtains += o.Obtains
	r.Failed += o.Failed
	r.Overlaps += o.Overlaps
	r.ObtainedWhileHeld += o.ObtainedWhileHeld
	r.LostEarly += o.LostEarly
	r.TokenOrder += o.TokenOrder
	r.StaleAccepted += o.StaleAccepted
	r.StaleRefused += o.StaleRefused
	r.HonestRefused += o.HonestRefused
	r.Violations = append(r.Violations, o.Violations...)
}

// maxShown is how many violations of each kind a report keeps.
const maxShown = 3

// acquisition is one successful obtain and what followed it.
type acquisition struct {
	id     int
	client int
	key    string
	obtain Event
	events []Event // refreshes, writes and the release, by start time
	token  int64
	begin  time.Duration // when the holder learned it held the lock
	end    time.Duration // when it stopped believing so
}

// Check checks a history (as returned by [History.Events]) and counts what
// it finds. It never fails: the caller decides which counts must be zero.
func Check(events []Event) Report {
	return check(events, (*checker).overlaps)
}

// check is [Check] with overlaps as the check of each key's acquisitions
// for holders at once (the lock's, or a semaphore's of [CheckLimit]).
func check(events []Event, overlaps func(c *checker, acqs []*acquisition)) Report {
	var r Report
	faults := []Event{}
	acqs := map[int]*acquisition{}
	var writes []Event
	for _, e := range events {
		switch e.Op {
		case OpFault:
			faults = append(faults, e)
			continue
		case OpWrite:
			writes = append(writes, e)
		}
		if e.Op != OpKeepAlive {
			r.Ops++
		}
		if e.Result == Failed {
			r.Failed++
		}
		if e.Op == OpObtain && e.Result == OK {
			r.Obtains++
			acqs[e.Acq] = &acquisition{id: e.Acq, client: e.Client, key: e.Key, obtain: e, token: e.Token, begin: e.End}
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

	c := checker{r: &r, faults: faults, acqs: acqs}
	byKey := map[string][]*acquisition{}
	for _, a := range acqs {
		c.validity(a)
		byKey[a.key] = append(byKey[a.key], a)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		overlaps(&c, byKey[k])
		c.tokenOrder(byKey[k])
	}
	c.writes(writes)
	return r
}

type checker struct {
	r      *Report
	faults []Event
	acqs   map[int]*acquisition
	shown  map[string]int
}

// validity computes when a's holder stopped believing it held the lock: the
// earliest of the end of its validity (extended by successful refreshes and
// by the validity its keep-alive reported), the start of its release, the
// end of a refresh that reported the lock gone, and the moment its holder
// saw its keep-alive end. A refresh, release or keep-alive that found it
// gone before the validity ran out is an early loss.
func (c *checker) validity(a *acquisition) {
	valid := a.obtain.validUntil()
	end := time.Duration(1<<63 - 1)
	for _, e := range a.events {
		switch {
		case e.Op == OpRefresh && e.Result == OK:
			valid = max(valid, e.validUntil())
		case e.Op == OpRefresh && e.Result == No:
			if e.End < valid {
				c.r.LostEarly++
				c.report("lost early", fmt.Sprintf("acquisition #%d: refresh ended at %.4fs reporting the lock gone, inside its validity (until %.4fs)",
					a.id, e.End.Seconds(), valid.Seconds()), a)
			}
			end = min(end, e.End)
		case e.Op == OpKeepAlive:
			if e.Valid != 0 {
				valid = max(valid, e.Valid)
			}
			switch e.Result {
			case No:
				if e.End < valid {
					c.r.LostEarly++
					c.report("lost early", fmt.Sprintf("acquisition #%d: keep-alive reported the lock gone at %.4fs, inside its validity (until %.4fs)",
						a.id, e.End.Seconds(), valid.Seconds()), a)
				}
				end = min(end, e.End)
			case Failed:
				end = min(end, e.End)
			}
		case e.Op == OpRelease:
			if e.Result == No && e.End < valid {
				c.r.LostEarly++
				c.report("lost early", fmt.Sprintf("acquisition #%d: release ended at %.4fs finding the lock gone, inside its validity (until %.4fs)",
					a.id, e.End.Seconds(), valid.Seconds()), a)
			}
			end = min(end, e.Start)
		}
	}
	a.end = min(end, valid)
}

// overlaps counts pairs of acquisitions of one key whose belief intervals
// intersect, and obtains that ran inside another holder's interval.
func (c *checker) overlaps(acqs []*acquisition) {
	slices.SortFunc(acqs, func(x, y *acquisition) int { return cmp.Or(compareDur(x.begin, y.begin), cmp.Compare(x.id, y.id)) })
	var active []*acquisition
	for _, b := range acqs {
		active = slices.DeleteFunc(active, func(a *acquisition) bool { return a.end <= b.begin })
		for _, a := range active {
			// a.end > b.begin: a still believed it held the lock when b
			// learned that it did.
			if b.end > b.begin {
				c.r.Overlaps++
				c.report("overlap", fmt.Sprintf("acquisitions #%d (client %d, %.4fs..%.4fs) and #%d (client %d, %.4fs..%.4fs) both believed they held %q",
					a.id, a.client, a.begin.Seconds(), a.end.Seconds(), b.id, b.client, b.begin.Seconds(), b.end.Seconds(), b.key), a, b)
			}
			if a.begin <= b.obtain.Start && b.obtain.End <= a.end {
				c.r.ObtainedWhileHeld++
				c.report("obtained while held", fmt.Sprintf("obtain of #%d (client %d) ran from %.4fs to %.4fs, entirely inside the validity of #%d (client %d, until %.4fs)",
					b.id, b.client, b.obtain.Start.Seconds(), b.obtain.End.Seconds(), a.id, a.client, a.end.Seconds()), a, b)
			}
		}
		if b.end > b.begin {
			active = append(active, b)
		}
	}
}

// tokenOrder counts acquisitions whose token is not above the token of
// every acquisition of the same key that ended (its obtain returned)
// before it began (its obtain was called).
func (c *checker) tokenOrder(acqs []*acquisition) {
	byStart := slices.Clone(acqs)
	slices.SortFunc(byStart, func(x, y *acquisition) int { return compareDur(x.obtain.Start, y.obtain.Start) })
	byEnd := slices.Clone(acqs)
	slices.SortFunc(byEnd, func(x, y *acquisition) int { return compareDur(x.obtain.End, y.obtain.End) })
	var top *acquisition // the highest token among those that ended
	i := 0
	for _, b := range byStart {
		for ; i < len(byEnd) && byEnd[i].obtain.End < b.obtain.Start; i++ {
			if byEnd[i].token != 0 && (top == nil || byEnd[i].token > top.token) {
				top = byEnd[i]
			}
		}
		if b.token != 0 && top != nil && b.token <= top.token {
			c.r.TokenOrder++
			c.report("token order", fmt.Sprintf("#%d got token %d, not above token %d of #%d, whose obtain ended before",
				b.id, b.token, top.token, top.id), top, b)
		}
	}
}

// writes checks the writes to each key in the store's order.
func (c *checker) writes(writes []Event) {
	slices.SortStableFunc(writes, func(x, y Event) int { return cmp.Or(strings.Compare(x.Key, y.Key), cmp.Compare(x.Seq, y.Seq)) })
	var top *Event // the accepted write with the highest token, per key
	for i := range writes {
		w := &writes[i]
		if top != nil && top.Key != w.Key {
			top = nil
		}
		if w.Result == OK {
			if top != nil && w.Token < top.Token {
				c.r.StaleAccepted++
				c.report("stale write accepted", fmt.Sprintf("write seq %d with token %d accepted after write seq %d with token %d",
					w.Seq, w.Token, top.Seq, top.Token), c.acqs[top.Acq], c.acqs[w.Acq])
			}
			if top == nil || w.Token > top.Token {
				top = w
			}
			continue
		}
		c.r.StaleRefused++
		if a := c.acqs[w.Acq]; a != nil && a.begin <= w.Start && w.Start < a.end {
			c.r.HonestRefused++
			var by *acquisition
			if top != nil {
				by = c.acqs[top.Acq]
			}
			c.report("honest write refused", fmt.Sprintf("write seq %d of #%d with token %d refused inside its validity (%.4fs..%.4fs)",
				w.Seq, a.id, w.Token, a.begin.Seconds(), a.end.Seconds()), a, by)
		}
	}
}

// report keeps a violation, with the events of the acquisitions involved
// and the faults of their time span, unless maxShown of its kind are kept.
func (c *checker) report(kind, what string, acqs ...*acquisition) {
	if c.shown == nil {
		c.shown = map[string]int{}
	}
	if c.shown[kind] >= maxShown {
		return
	}
	c.shown[kind]++
	var events []Event
	for _, a := range acqs {
		if a == nil {
			continue
		}
		events = append(events, a.obtain)
		events = append(events, a.events...)
	}
	if len(events) > 0 {
		from, to := events[0].Start, events[0].End
		for _, e := range events {
			from, to = min(from, e.Start), max(to, e.End)
		}
		for _, f := range c.faults {
			if f.Start >= from && f.Start <= to {
				events = append(events, f)
			}
		}
		// The last fault before the span says what was going on.
		for i := len(c.faults) - 1; i >= 0; i-- {
			if c.faults[i].Start < from {
				events = append(events, c.faults[i])
				break
			}
		}
	}
	slices.SortStableFunc(events, func(x, y Event) int { return compareDur(x.Start, y.Start) })
	c.r.Violations = append(c.r.Violations, Violation{Kind: kind, What: what, Events: events})
}
