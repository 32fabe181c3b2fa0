package session

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redislock/redislock/internal/lease"
)

// Entry is one lease kept by a session: its [lease.Keeper], and what the
// holder watches (Done, Err, Context, ValidUntil). Its methods are safe
// for concurrent use.
//
// A session holds one per lease, so it is kept small: the error of its
// last failed refresh is in the loop's map (Session.failing), its keys in
// its Member.
type Entry struct {
	s     *Session
	lease *lease.Lease
	m     Member
	sig   lease.Signal
	batch *batch      // guarded by s.fly: the batch it is in flight in
	dirty atomic.Bool // queued for the loop to re-read its lease

	// Guarded by s.fly: it has ended (no refresh of it is sent any more),
	// and how (a lease.Reason).
	stopped bool
	how     uint8

	// The loop's own (the adder's until the loop takes it).
	where      where
	failures   uint8 // in a row; Backoff's ceiling comes after a few
	due, dead  slot
	node       *node
	dueAt      int64 // when its next refresh is due
	validUntil int64 // its lease's ValidUntil, with the margin
	sent       int64 // its lease's send time, as last seen
	maxHold    int64 // when MaxHold passes; 0: never
}

// where is where an entry is in the loop's structures.
type where uint8

const (
	added   where = iota // handed to the loop, not taken yet
	waiting              // in the due heap
	pending              // in its node's pending list: due, its node busy
	flying               // in a batch
	gone                 // ended: in none
)

// Done returns a channel that is closed when the lease's keeping ends.
func (e *Entry) Done() <-chan struct{} { return e.sig.Done() }

// Err returns nil while the lease is kept, then, for good, how it ended
// (Config.Lease.Ended's error).
func (e *Entry) Err() error { return e.sig.Err() }

// Context returns a context derived from parent that is also cancelled,
// with Err as its cause, when the lease's keeping ends.
func (e *Entry) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return e.sig.Context(parent)
}

// ValidUntil returns the lease's ValidUntil with the session's margin.
func (e *Entry) ValidUntil() time.Time { return e.lease.ValidUntil(e.s.cfg.Margin) }

// Changed tells the loop that the lease changed ([lease.Keeper]).
func (e *Entry) Changed() {
	if e.dirty.CompareAndSwap(false, true) {
		e.s.qmu.Lock()
		e.s.dirty = append(e.s.dirty, e)
		e.s.qmu.Unlock()
		e.s.wake()
	}
}

// Stop ends the lease's keeping, as stopped unless it had ended, and takes
// it out of the session; it waits up to [lease.StopWait] for a refresh of
// it in flight ([lease.Keeper]).
func (e *Entry) Stop() {
	if err := e.signal(lease.End{Reason: lease.Stopped}); err != nil {
		e.s.qmu.Lock()
		e.s.out = append(e.s.out, e)
		e.s.qmu.Unlock()
		e.s.wake()
		e.callEnded(lease.End{Reason: lease.Stopped}, err)
	}
	e.Wait()
}

// Ended reports whether the lease's keeping has ended ([lease.Keeper]).
func (e *Entry) Ended() bool { return e.sig.Closed() }

// Wait returns once no refresh of the ended lease is in flight, or
// [lease.StopWait] later ([lease.Keeper]).
func (e *Entry) Wait() {
	e.s.fly.Lock()
	b := e.batch
	e.s.fly.Unlock()
	if b == nil {
		return
	}
	t := time.NewTimer(lease.StopWait)
	defer t.Stop()
	select {
	case <-b.done:
	case <-t.C:
	}
}

// signal ends the lease's keeping as end says, unless it has ended: no
// refresh of it is sent from now on, then its contexts are cancelled and
// Done closed. It returns the error it ended with, nil when it had ended.
func (e *Entry) signal(end lease.End) error {
	if !e.sig.Begin() {
		return nil
	}
	e.s.fly.Lock()
	e.stopped, e.how = true, uint8(end.Reason) //nolint:gosec // G115: a Reason is a small constant
	e.s.fly.Unlock()
	err := e.s.ended(end)
	e.sig.Cancel(err)
	e.sig.Close()
	return err
}

// end is signal then callEnded.
func (e *Entry) end(end lease.End) {
	if err := e.signal(end); err != nil {
		e.callEnded(end, err)
	}
}

// callEnded calls what the member's Ended returns; a panic in it is
// dropped.
func (e *Entry) callEnded(end lease.End, err error) {
	if f := e.m.Ended(); f != nil {
		defer func() { _ = recover() }()
		f(end, err)
	}
}

// mayBeHeld reports whether the ended lease may still be held by its
// holder: it was not stopped (released) nor found gone or taken.
func (e *Entry) mayBeHeld() bool {
	e.s.fly.Lock()
	defer e.s.fly.Unlock()
	return !e.stopped || (e.how != uint8(lease.Stopped) && e.how != uint8(lease.NotHeld))
}

// ended returns the error of a lease that ended as end says.
func (s *Session) ended(end lease.End) error {
	if s.cfg.Ended != nil {
		return s.cfg.Ended(end)
	}
	return end
}
