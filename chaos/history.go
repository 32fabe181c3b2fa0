package chaos

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Op is the kind of an [Event].
type Op uint8

// The operations a history records.
const (
	// OpObtain is one Obtain call; OK means it returned a lock, which starts
	// an acquisition.
	OpObtain Op = iota + 1
	// OpRefresh is one Refresh call of an acquisition.
	OpRefresh
	// OpRelease is the Release call that ends an acquisition.
	OpRelease
	// OpWrite is a write to the protected [Store] with the acquisition's
	// fence token; OK means the store accepted it.
	OpWrite
	// OpFault marks a change of the fault schedule (Note says which).
	OpFault
	// OpKeepAlive is what an acquisition's keep-alive ([redislock.KeepAlive])
	// said, read by the holder; it is not a call to Redis. Valid is its
	// ValidUntil then (0 when it was the zero Time: the lock is known gone).
	// The holder records one before each write (OK: it believes it holds
	// the lock until Valid) and one when the keep-alive ends: OK when the
	// holder stopped it (before Release, or for a pause), No when a refresh
	// found the lock gone (Err is the keep-alive's Err), Failed when it
	// ended otherwise (its validity ran out without a successful refresh).
	// Start and End are when the holder saw it.
	OpKeepAlive
)

func (o Op) String() string {
	switch o {
	case OpObtain:
		return "obtain"
	case OpRefresh:
		return "refresh"
	case OpRelease:
		return "release"
	case OpWrite:
		return "write"
	case OpFault:
		return "fault"
	case OpKeepAlive:
		return "keepalive"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Result is how a call ended.
type Result uint8

// The results of a call.
const (
	// OK: obtained, refreshed, released, or (for a write) accepted.
	OK Result = iota + 1
	// No: a definite no. The lock is held by another (obtain), no longer
	// held (refresh, release), or the write was refused.
	No
	// Failed: an error whose outcome is unknown (a timeout, a reset): the
	// command may or may not have run.
	Failed
)

func (r Result) String() string {
	switch r {
	case OK:
		return "ok"
	case No:
		return "no"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("result(%d)", uint8(r))
}

// Event is one recorded operation. Times are offsets from the start of the
// [History] on the monotonic clock.
type Event struct {
	Op     Op
	Client int    // the worker that made the call
	Acq    int    // the acquisition it belongs to; 0 for a failed obtain or a fault
	Key    string // the lock key
	Start  time.Duration
	End    time.Duration
	Result Result
	Err    string        // the error of a Failed (or No) call
	Token  int64         // obtain: the fence token obtained; write: the token sent
	TTL    time.Duration // obtain and refresh: the lease the holder believes, counted from Start
	Valid  time.Duration // keep-alive: its ValidUntil, as an offset like Start; 0 for none
	Seq    int64         // write: the store's order of writes to Key
	Note   string        // fault: what changed
}

// validUntil is the end of the holder's validity that a successful obtain
// or refresh gives: the key cannot expire before its send time plus the TTL.
func (e Event) validUntil() time.Duration { return e.Start + e.TTL }

func (e Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%9.4fs", e.Start.Seconds())
	if e.Op == OpFault {
		fmt.Fprintf(&b, "  ---- %s", e.Note)
		return b.String()
	}
	fmt.Fprintf(&b, "..%9.4fs  c%-3d", e.End.Seconds(), e.Client)
	if e.Acq > 0 {
		fmt.Fprintf(&b, " #%-5d", e.Acq)
	} else {
		b.WriteString("       ")
	}
	fmt.Fprintf(&b, " %-7s %-6s", e.Op, e.Result)
	switch e.Op {
	case OpObtain, OpRefresh:
		if e.Result == OK {
			fmt.Fprintf(&b, " valid until %.4fs", e.validUntil().Seconds())
		}
	case OpKeepAlive:
		if e.Valid != 0 {
			fmt.Fprintf(&b, " valid until %.4fs", e.Valid.Seconds())
		}
	}
	if e.Token != 0 {
		fmt.Fprintf(&b, " token=%d", e.Token)
	}
	if e.Op == OpWrite {
		fmt.Fprintf(&b, " seq=%d", e.Seq)
	}
	if e.Err != "" {
		fmt.Fprintf(&b, " err=%q", e.Err)
	}
	return b.String()
}

// History records the events of one run. It is safe for concurrent use.
type History struct {
	origin time.Time

	mu      sync.Mutex
	events  []Event
	acqs    int
	refused chan struct{} // closed when the first refused write is recorded
}

// NewHistory returns an empty history whose clock starts now.
func NewHistory() *History {
	return &History{origin: time.Now(), refused: make(chan struct{})}
}

// Refused returns a channel that is closed once the history holds a
// refused write (an [OpWrite] event with [No]): a fault schedule that must
// see fencing refuse a stale write can wait for it.
func (h *History) Refused() <-chan struct{} { return h.refused }

// Now returns the time since the history began, on the monotonic clock.
func (h *History) Now() time.Duration { return time.Since(h.origin) }

// At returns t as an offset like [History.Now]. t must carry a monotonic
// clock reading (as [time.Now] and [redislock.KeepAlive.ValidUntil] do), so
// that the offset is exact.
func (h *History) At(t time.Time) time.Duration { return t.Sub(h.origin) }

// NewAcq returns a new acquisition number (1, 2, …).
func (h *History) NewAcq() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.acqs++
	return h.acqs
}

// Add records e.
func (h *History) Add(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	if e.Op == OpWrite && e.Result == No {
		select {
		case <-h.refused:
		default:
			close(h.refused)
		}
	}
}

// Fault records a change of the fault schedule, now.
func (h *History) Fault(format string, args ...any) {
	now := h.Now()
	h.Add(Event{Op: OpFault, Start: now, End: now, Note: fmt.Sprintf(format, args...)})
}

// Events returns a copy of the events recorded so far, sorted by start time.
func (h *History) Events() []Event {
	h.mu.Lock()
	events := slices.Clone(h.events)
	h.mu.Unlock()
	slices.SortStableFunc(events, func(a, b Event) int { return compareDur(a.Start, b.Start) })
	return events
}

func compareDur(a, b time.Duration) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
