package session

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/lease"
)

// node is where batches go: one Redis node (a Cluster master), or the
// whole client. Its sender goroutine sends one batch at a time.
type node struct {
	name string
	send chan *batch // capacity 1: the loop sends only to a node not busy

	// The loop's own.
	busy    bool
	pending []*Entry // due while busy
	ready   bool     // in the loop's list of nodes with pending entries
}

// batch is one round trip of refreshes to a node.
type batch struct {
	node    *node
	entries []*Entry
	out     []outcome
	sent    time.Time     // read before any of it was sent
	done    chan struct{} // closed once its replies are in
	moved   []moved       // entries whose keys another node serves now
	calls   []Call        // the refreshes sent, in the order of the entries not skipped
}

// outcome is what a batch learnt of one entry.
type outcome struct {
	skipped bool // not sent: it had ended, or its lease was not held
	Reply
}

// moved is an entry of a batch whose slot another node serves now.
type moved struct {
	i    int
	node string
}

// chunk is how many entries the loop handles between two looks at the
// deadlines, so that no work of its own delays a loss signal by much.
const chunk = 512

// run is the loop: it owns the heaps, the timers and every decision.
func (s *Session) run() {
	defer close(s.exited)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var ready []*node
	for {
		s.arm(timer)
		select {
		case <-s.ctx.Done():
			return
		case <-s.poke:
		case <-timer.C:
		case b := <-s.results:
			if !s.settle(b, &ready) {
				return
			}
		}
		if !s.intake(true) || !s.expire() {
			return
		}
		var ok bool
		if ready, ok = s.collect(ready); !ok {
			return
		}
		ready = s.dispatch(ready)
		s.callAfters()
	}
}

// arm sets timer to the next thing the loop has to do by itself: the
// earliest due refresh or deadline.
func (s *Session) arm(timer *time.Timer) {
	next := int64(math.MaxInt64)
	if s.due.len() > 0 {
		next = s.due.top().dueAt
	}
	if s.dead.len() > 0 {
		next = min(next, s.dead.top().deadline())
	}
	d := time.Hour
	if next != math.MaxInt64 {
		d = time.Duration(next - s.now())
	}
	timer.Reset(d)
}

// intake takes what other goroutines handed over: leases added, leases
// whose lease changed, leases stopped. It returns false when the session
// was lost meanwhile (check: it looks at the deadlines between chunks).
func (s *Session) intake(check bool) bool {
	s.qmu.Lock()
	adds, dirty, out := s.adds, s.dirty, s.out
	s.adds, s.dirty, s.out = s.spare[0][:0], s.spare[1][:0], s.spare[2][:0]
	s.qmu.Unlock()
	defer func() {
		// The lists go back as spares, emptied, so that the next ones
		// reuse their arrays.
		clear(adds)
		clear(dirty)
		clear(out)
		s.spare = [3][]*Entry{adds[:0], dirty[:0], out[:0]}
	}()
	for i, e := range adds {
		if check && i%chunk == chunk-1 && !s.expire() {
			for _, e := range adds[i:] {
				s.end(e, s.lost)
			}
			return false
		}
		if e.sig.Begun() {
			continue // stopped before the loop saw it
		}
		e.where = waiting
		s.due.fix(e)
		s.dead.fix(e)
	}
	for _, e := range out {
		s.drop(e)
	}
	for i, e := range dirty {
		if check && i%chunk == chunk-1 && !s.expire() {
			return false
		}
		e.dirty.Store(false)
		if e.where != gone && !e.sig.Begun() {
			s.follow(e)
		}
	}
	return true
}

// follow re-reads e's lease, which others may have changed (a Refresh of
// the holder's own): it ends e when the lease is lost or released, moves
// its deadline, and, when a refresh of the holder's own set the lease,
// schedules the next refresh from it. It reports whether e goes on.
func (s *Session) follow(e *Entry) bool {
	st, validUntil, sent := e.lease.Status(s.cfg.Margin)
	switch st {
	case lease.StateLost:
		s.end(e, lease.End{Reason: lease.NotHeld})
		return false
	case lease.StateReleased, lease.StateUnknown:
		s.end(e, lease.End{Reason: lease.Stopped})
		return false
	}
	if v := s.at(validUntil); v != e.validUntil {
		e.validUntil = v
		s.dead.fix(e)
	}
	if at := s.at(sent); at != e.sent && e.where != flying {
		e.sent, e.failures = at, 0
		delete(s.failing, e)
		e.dueAt = s.at(s.cfg.NextRefresh(sent, validUntil))
		if e.where == waiting {
			s.due.fix(e)
		}
	}
	return true
}

// expire ends the leases whose deadline has passed: MaxHold, or the
// lease's ValidUntil without a successful refresh, which loses the
// session. It returns false when the session is lost.
func (s *Session) expire() bool {
	for s.dead.len() > 0 {
		e := s.dead.top()
		now := s.now()
		if e.deadline() > now {
			return true
		}
		if e.maxHold != 0 && e.maxHold <= now {
			s.end(e, lease.End{Reason: lease.MaxHoldReached, MaxHold: s.cfg.MaxHold})
			continue
		}
		// A Renewed of the holder's own may have moved the lease on.
		if !s.follow(e) || e.validUntil > now {
			continue
		}
		s.lose(e, lease.End{Reason: lease.Expired, Err: s.failing[e], InFlight: e.where == flying})
		return false
	}
	return true
}

// collect moves the leases due now, and those due within the window, to
// their nodes' pending lists, and returns the nodes that have some. ok is
// false when the session was lost meanwhile (it looks at the deadlines
// between chunks).
func (s *Session) collect(ready []*node) (_ []*node, ok bool) {
	if s.due.len() == 0 || s.due.top().dueAt > s.now() {
		return ready, true
	}
	limit := s.now() + int64(s.window)
	for i := 0; s.due.len() > 0 && s.due.top().dueAt <= limit; i++ {
		if i%chunk == chunk-1 && !s.expire() {
			return ready, false
		}
		e := s.due.pop()
		e.where = pending
		n := e.node
		n.pending = append(n.pending, e)
		if !n.ready {
			n.ready = true
			ready = append(ready, n)
		}
	}
	return ready, true
}

// dispatch hands a batch to every node of ready that is not busy, and
// returns the nodes that still have pending entries.
func (s *Session) dispatch(ready []*node) []*node {
	left := ready[:0]
	for _, n := range ready {
		if !n.busy {
			s.send(n)
		}
		if len(n.pending) > 0 {
			left = append(left, n)
		} else {
			n.ready = false
		}
	}
	clear(ready[len(left):])
	return left
}

// send hands n's pending entries, up to maxBatch, to its sender.
func (s *Session) send(n *node) {
	var list []*Entry
	k := 0
	for i, e := range n.pending {
		if len(list) == maxBatch {
			k = copy(n.pending, n.pending[i:])
			break
		}
		if e.where == pending {
			e.where = flying
			list = append(list, e)
		}
	}
	clear(n.pending[k:])
	n.pending = n.pending[:k]
	if len(list) == 0 {
		return
	}
	n.busy = true
	n.send <- &batch{node: n, entries: list, out: make([]outcome, len(list)), done: make(chan struct{})}
}

// settle records the outcome of each lease of b, and sends n's next batch
// if it has pending entries. It returns false when the session was lost.
func (s *Session) settle(b *batch, ready *[]*node) bool {
	n := b.node
	n.busy = false
	for _, m := range b.moved {
		if e := b.entries[m.i]; e.where == flying {
			s.mu.Lock()
			if !s.closing {
				e.node = s.node(m.node)
			}
			s.mu.Unlock()
		}
	}
	ttl := s.cfg.TTL
	for i, e := range b.entries {
		if i%chunk == chunk-1 && !s.expire() {
			return false
		}
		if e.where != flying {
			continue // it ended meanwhile
		}
		if e.sig.Begun() {
			s.drop(e) // stopped: its drop is queued
			continue
		}
		o := b.out[i]
		switch {
		case o.skipped:
			// Its lease was no longer held when the batch went.
			e.where = waiting
			if s.follow(e) {
				s.due.fix(e)
			}
		case o.Err == nil && o.N == 1:
			// The loop's own change: no need to be told of it.
			e.dirty.Store(true)
			e.lease.Renewed(b.sent, ttl)
			e.dirty.Store(false)
			e.where = waiting
			e.sent = -1 // follow schedules the next refresh from the lease it reads
			s.follow(e)
		case o.Err == nil && (o.N == 0 || o.N == -1):
			e.lease.Lost(b.sent)
			err := lease.ErrNotHeld
			if o.N == -1 {
				err = lease.ErrTaken
			}
			s.end(e, lease.End{Reason: lease.NotHeld, Err: err})
		case o.Err == nil:
			s.end(e, lease.End{Reason: lease.Failed, Err: fmt.Errorf("unexpected reply %d to a refresh", o.N)})
		case s.ctx.Err() != nil:
			return true // closing
		case s.cfg.Transient != nil && s.cfg.Transient(o.Err):
			e.failures = max(e.failures, e.failures+1) // stays at 255
			s.failing[e] = o.Err
			e.where = waiting
			e.dueAt = s.now() + int64(s.cfg.Backoff(int(e.failures)))
			s.due.fix(e)
		case !isReply(o.Err):
			// The client failed, not the server: nothing will get through.
			s.lose(e, lease.End{Reason: lease.Failed, Err: o.Err})
			return false
		default:
			s.end(e, lease.End{Reason: lease.Failed, Err: o.Err})
		}
	}
	if len(n.pending) > 0 && !n.ready {
		n.ready = true
		*ready = append(*ready, n)
	}
	return true
}

// isReply reports whether err is an error reply of the server.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// end ends e as end says, takes it out of the loop's structures, and
// queues its Member.Ended.
func (s *Session) end(e *Entry, end lease.End) {
	s.drop(e)
	if err := e.signal(end); err != nil {
		s.after = append(s.after, ended{e: e, end: end, err: err})
	}
	if end.Reason != lease.Stopped && end.Reason != lease.NotHeld {
		s.kept = append(s.kept, e)
	}
}

// drop takes e out of the loop's structures.
func (s *Session) drop(e *Entry) {
	s.due.remove(e)
	s.dead.remove(e)
	delete(s.failing, e)
	e.where = gone
}

// lose ends the session because of e, which ends as end says: every other
// lease still kept ends with lease.SessionLost, all of them signalled
// before any Member.Ended runs.
func (s *Session) lose(e *Entry, end lease.End) {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	err := s.ended(end)
	if s.sig.Begin() {
		s.sig.Cancel(err)
	}
	s.end(e, end)
	s.lost = lease.End{Reason: lease.SessionLost, Err: end.Err, InFlight: end.InFlight}
	s.intake(false)
	for s.dead.len() > 0 {
		s.end(s.dead.top(), s.lost)
	}
	s.cancel()
	s.sig.Close()
	s.callAfters()
}

// callAfters calls the Member.Ended of the leases that ended.
func (s *Session) callAfters() {
	for _, x := range s.after {
		x.e.callEnded(x.end, x.err)
	}
	clear(s.after)
	s.after = s.after[:0]
}

// sender is n's goroutine: it sends each batch the loop hands it and
// hands it back with its outcomes.
func (s *Session) sender(n *node) {
	defer s.senders.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case b := <-n.send:
			s.exchange(b)
			select {
			case s.results <- b:
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// exchange sends b's refreshes in one round trip and records their
// outcomes. Its leases' sends are recorded in their leases first, with a
// time read before anything was sent.
func (s *Session) exchange(b *batch) {
	defer close(b.done)
	s.fly.Lock()
	for i, e := range b.entries {
		if e.stopped {
			b.out[i].skipped = true
			continue
		}
		e.batch = b
	}
	s.fly.Unlock()
	defer func() {
		s.fly.Lock()
		for _, e := range b.entries {
			if e.batch == b {
				e.batch = nil
			}
		}
		s.fly.Unlock()
	}()

	b.sent = time.Now()
	calls := make([]Call, 0, len(b.entries))
	var told []func(error) // the hooks' ends, by entry; nil without hooks
	for i, e := range b.entries {
		if b.out[i].skipped || !e.lease.Sending(b.sent, s.cfg.TTL) {
			b.out[i].skipped = true
			continue
		}
		c, f := e.m.RefreshCall(s.ctx, s.ms)
		calls = append(calls, c)
		if f != nil {
			if told == nil {
				told = make([]func(error), len(b.entries))
			}
			told[i] = f
		}
	}
	replies := s.tr.run(s.ctx, calls, true)
	b.calls = calls
	j := 0
	for i := range b.entries {
		if b.out[i].skipped {
			continue
		}
		b.out[i].Reply = replies[j]
		j++
		if told != nil && told[i] != nil {
			told[i](refreshErr(b.out[i].Reply))
		}
	}
	b.moved = s.tr.moved(s.ctx, b)
}

// refreshErr is the error of a refresh that replied r, as the hooks see
// it.
func refreshErr(r Reply) error {
	switch {
	case r.Err != nil:
		return r.Err
	case r.N == 1:
		return nil
	case r.N == -1:
		return lease.ErrTaken
	case r.N == 0:
		return lease.ErrNotHeld
	}
	return fmt.Errorf("unexpected reply %d to a refresh", r.N)
}
