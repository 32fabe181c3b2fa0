// Package election is the engine of an election's observers: it orders
// what an observer hears (reads of the election and notifications, which
// come over different connections) into a stream of changes, and runs the
// loop that listens and re-reads; and it holds the mechanics of a
// campaign that need none of the root's types (names, one round's
// deadline and retries). It knows the election's notices
// (lua/election_proclaim.lua, lua/election_resigned.lua) but not the
// public API: the root package converts its events.
package election

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The timing of observers (docs/election.md).
const (
	// Resync bounds how stale an observer can be after a lost
	// notification (a reconnect, a failover): it reads the election again
	// at least this often, whatever it has heard.
	Resync = time.Second
	// Retry is how long an observer waits after a failed read or a
	// broken notification connection before it tries again.
	Retry = 100 * time.Millisecond
)

// State is what an observer knows of an election, from a read or a
// notice.
type State struct {
	// Current: the state was read (ParseLeader), not heard: it is the
	// election's state at the read, whatever terms were heard before.
	Current bool
	Leads   bool
	Term    int64
	Rev     int64 // the value's revision within the term
	TTL     time.Duration
	Value   string
}

// Change is what an Event reports.
type Change uint8

// The changes of an election, with the values of the root's
// LeaderEventKind (LeaderElected, LeaderProclaimed, NoLeader).
const (
	Elected Change = iota + 1
	Proclaimed
	Ended
)

// Event is one change of an election.
type Event struct {
	Change Change
	Term   int64
	Value  string
}

// Observer orders states into events: the term, then the revision within
// a term, then "ended" order them, so that a state older than one
// reported changes nothing. Its zero value has seen nothing.
type Observer struct {
	known bool
	cur   State
}

// Update returns out with the events that x makes appended, in order, and
// records x.
func (o *Observer) Update(x State, out []Event) []Event {
	switch {
	case !o.known:
		o.known, o.cur = true, x
		if x.Leads {
			return append(out, Event{Elected, x.Term, x.Value})
		}
		return append(out, Event{Ended, x.Term, ""})
	case x.Term < o.cur.Term && x.Current:
		// A read below the term reported: the term counter was lost (a
		// restart without persistence, a deleted counter), or the clocks
		// that floor the terms went back. What was read is the state now.
		if o.cur.Leads {
			out = append(out, Event{Ended, o.cur.Term, ""})
		}
		if !x.Leads {
			o.cur.Leads = false // the last term reported stays the floor
			return out
		}
		o.cur = x
		return append(out, Event{Elected, x.Term, x.Value})
	case x.Term < o.cur.Term:
		return out // an old notice
	case x.Term == o.cur.Term:
		switch {
		case !o.cur.Leads: // the term has ended: nothing of it is news
		case !x.Leads:
			o.cur.Leads = false
			out = append(out, Event{Ended, x.Term, ""})
		case x.Rev > o.cur.Rev:
			changed := x.Value != o.cur.Value
			o.cur.Rev, o.cur.Value = x.Rev, x.Value
			if changed {
				out = append(out, Event{Proclaimed, x.Term, x.Value})
			}
		}
		return out
	}
	// A later term: the one reported has ended.
	if o.cur.Leads {
		out = append(out, Event{Ended, o.cur.Term, ""})
	}
	o.cur = x
	if x.Leads {
		out = append(out, Event{Elected, x.Term, x.Value})
	}
	return out
}

// ParseNotice parses a message of the election's scripts: "N:<term>" (the
// leadership of term ended) or "L:<term>:<rev>:<pttl>:<value>".
func ParseNotice(payload string) (State, bool) {
	parts := strings.SplitN(payload, ":", 5)
	switch {
	case len(parts) == 2 && parts[0] == "N":
		term, err := strconv.ParseInt(parts[1], 10, 64)
		return State{Term: term}, err == nil
	case len(parts) == 5 && parts[0] == "L":
		term, err1 := strconv.ParseInt(parts[1], 10, 64)
		rev, err2 := strconv.ParseInt(parts[2], 10, 64)
		pttl, err3 := strconv.ParseInt(parts[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return State{}, false
		}
		return State{Leads: true, Term: term, Rev: rev, TTL: time.Duration(pttl) * time.Millisecond, Value: parts[4]}, true
	}
	return State{}, false
}

// ParseLeader reads the reply of lua/election_leader.lua: {1, term, rev,
// pttl, value} for a leader, {0, term} for none.
func ParseLeader(reply []any) (State, bool) {
	if len(reply) < 2 {
		return State{}, false
	}
	flag, ok1 := reply[0].(int64)
	term, ok2 := reply[1].(int64)
	switch {
	case !ok1 || !ok2:
		return State{}, false
	case flag == 0:
		return State{Current: true, Term: term}, true
	case len(reply) != 5:
		return State{}, false
	}
	rev, ok1 := reply[2].(int64)
	pttl, ok2 := reply[3].(int64)
	value, ok3 := reply[4].(string)
	if !ok1 || !ok2 || !ok3 {
		return State{}, false
	}
	return State{Current: true, Leads: true, Term: term, Rev: rev, TTL: time.Duration(pttl) * time.Millisecond, Value: value}, true
}

// Watch reports the election's changes to emit until ctx ends or emit
// returns false: it reads the election with read at once (after the
// subscription's confirmation, when ps is not nil), at least every
// Resync, and when the leader's key can expire; and it parses each notice
// that ps receives. ps may be nil (no notifications: reads only); Watch
// closes it when it returns. It runs on the caller's goroutine.
func Watch(ctx context.Context, ps *redis.PubSub, read func(context.Context) (State, error), emit func([]Event) bool) {
	now := time.Now()
	next := now // the next read
	if ps != nil {
		defer func() { _ = ps.Close() }()
		// Closing the subscription ends a receive in progress when ctx ends.
		stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
		defer stop()
		// The first read follows the subscription's confirmation, so that
		// no change between the two is missed; the timer is only a backstop.
		next = now.Add(Resync)
	}
	var o Observer
	var events []Event
	// expiry schedules a read when the leader's key can expire.
	expiry := func(x State, heard time.Time) {
		if x.Leads && x.TTL >= 0 {
			if at := heard.Add(x.TTL + time.Millisecond); at.Before(next) {
				next = at
			}
		}
	}
	for ctx.Err() == nil {
		wait := time.Until(next)
		if wait <= 0 {
			sent := time.Now()
			x, err := read(ctx)
			if err != nil {
				next = time.Now().Add(Retry)
				continue
			}
			if events = o.Update(x, events[:0]); !emit(events) {
				return
			}
			next = sent.Add(Resync)
			expiry(x, sent)
			continue
		}
		if ps == nil {
			if !Sleep(ctx, wait) {
				return
			}
			continue
		}
		msg, err := ps.ReceiveTimeout(ctx, wait)
		heard := time.Now()
		if err != nil {
			if isTimeout(err) {
				continue
			}
			// A broken connection: go-redis dials again and subscribes
			// anew at the next receive; the confirmation triggers a read.
			if !Sleep(ctx, Retry) {
				return
			}
			next = time.Now()
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			next = heard
		case *redis.Message:
			x, ok := ParseNotice(m.Payload)
			if !ok {
				continue
			}
			if events = o.Update(x, events[:0]); !emit(events) {
				return
			}
			expiry(x, heard)
		}
	}
}

// Sleep waits for d or until ctx ends; it reports whether ctx is still
// live.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// isTimeout reports a receive that ended at its timeout, with the
// connection still sound.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Observe is an observer's goroutine: it subscribes client to channel
// ([Subscribe]), reports the election's changes on ch, each converted by
// conv, until ctx ends ([Watch]), and then closes ch. A send waits until
// it is received or ctx ends.
func Observe[T any](ctx context.Context, client any, channel string, sharded bool,
	read func(context.Context) (State, error), ch chan<- T, conv func(Event) T) {
	defer close(ch)
	Watch(ctx, Subscribe(ctx, client, channel, sharded), read, func(events []Event) bool {
		for _, x := range events {
			select {
			case ch <- conv(x):
			case <-ctx.Done():
				return false
			}
		}
		return true
	})
}
