package quorum

import (
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/lease"
)

// The protocol's decisions, as plain functions of the nodes' replies and
// the clock's readings. The engine calls them with real replies; the model
// checker (model_test.go) calls the same functions with the replies of
// its simulated nodes, so what it checks is what the engine does.

// Majority returns the number of nodes, out of n, that make a majority:
// n/2 + 1.
func Majority(n int) int { return n/2 + 1 }

// Drift returns the margin taken off a lease of ttl for the clocks:
// ttl/50 + 2 ms, the single-node lease's margin ([lease.DefaultMargin]).
func Drift(ttl time.Duration) time.Duration { return lease.DefaultMargin(ttl) }

// Validity returns how long, from the moment a round was sent, a majority
// that it took (or extended) for ttl holds the lock: ttl − Drift(ttl). It
// is not positive for a TTL of 2 ms or less.
func Validity(ttl time.Duration) time.Duration { return ttl - Drift(ttl) }

// inTime reports whether a round sent at sent for ttl, whose last reply
// came at now, still leaves the lock held: now is before sent +
// Validity(ttl).
func inTime(sent, now time.Time, ttl time.Duration) bool {
	return now.Before(sent.Add(Validity(ttl)))
}

// continuous reports whether a refresh at now continues a lease valid
// until validUntil: only a lease that has not ended yet is renewed.
func continuous(now, validUntil time.Time) bool { return now.Before(validUntil) }

// Token bounds. Replies 1 and 2 of obtain.lua mean held and recovering, so
// no token is below 3; Lua's numbers hold integers exactly below 2^53.
const (
	minToken = 3
	maxToken = 1 << 53
)

// maxRounds bounds the rounds of one acquisition: round 1 and up to three
// confirmations. A second round settles every token unless the counters
// move while the keys are held (duplicated scripts, fence keys shared by
// several locks).
const maxRounds = 4

// propose returns round 1's token: the wall clock in µs, or above the
// highest token or counter seen, whichever is higher (never below
// minToken). Any value is safe; these make one round the usual case.
func propose(wallMicros, seen int64) int64 {
	return max(wallMicros, seen+1, minToken)
}

// nextToken returns the token of the next round: above the current one
// and every counter seen.
func nextToken(token, high int64) int64 { return max(token, high) + 1 }

// replyKind is what one node answered in one round.
type replyKind uint8

const (
	rSkipped    replyKind = iota // the node was not in the round
	rFailed                      // an error: the outcome on the node is unknown
	rHeld                        // a key is held by another token; nothing written
	rRecovering                  // the node takes nothing yet; nothing written
	rTaken                       // unfenced obtain: the keys are taken
	rConfirmed                   // the round's token is confirmed; the keys are the token's
	rLow                         // the keys are the token's, but the counter is at or above the round's token
	rLost                        // confirm, refresh: a key is no longer the token's
	rKept                        // refresh: every key is the token's, extended or re-taken
)

// nodeReply is one node's answer in one round.
type nodeReply struct {
	kind  replyKind
	value int64 // rLow: the node's counter; rKept for TTL: milliseconds
	err   error // rFailed
}

// failedReply is the reply of a node that gave err.
func failedReply(err error) nodeReply { return nodeReply{kind: rFailed, err: err} }

// unexpected is the reply for a script reply that the scripts never give.
func unexpected(script string, v any) nodeReply {
	return failedReply(fmt.Errorf("%w: %s: %#v", ErrUnexpectedReply, script, v))
}

// parseObtain reads obtain.lua's reply for proposal p.
func parseObtain(v any, err error, fenced bool, p int64) nodeReply {
	if err != nil {
		return failedReply(err)
	}
	n, ok := v.(int64)
	switch {
	case !ok:
	case n == 1:
		return nodeReply{kind: rHeld}
	case n == 2:
		return nodeReply{kind: rRecovering}
	case !fenced && n == 0:
		return nodeReply{kind: rTaken}
	case fenced && n == p:
		return nodeReply{kind: rConfirmed}
	case fenced && n < 0 && -n >= p:
		return nodeReply{kind: rLow, value: -n}
	}
	return unexpected("obtain.lua", v)
}

// parseConfirm reads confirm.lua's reply for token q.
func parseConfirm(v any, err error, q int64) nodeReply {
	if err != nil {
		return failedReply(err)
	}
	n, ok := v.(int64)
	switch {
	case !ok:
	case n == q:
		return nodeReply{kind: rConfirmed}
	case n == 0:
		return nodeReply{kind: rLost}
	case n < 0 && -n >= q:
		return nodeReply{kind: rLow, value: -n}
	}
	return unexpected("confirm.lua", v)
}

// parseRefresh reads refresh.lua's reply.
func parseRefresh(v any, err error) nodeReply {
	if err != nil {
		return failedReply(err)
	}
	n, ok := v.(int64)
	switch {
	case !ok:
	case n == 1:
		return nodeReply{kind: rKept}
	case n == 0:
		return nodeReply{kind: rLost}
	case n == -1:
		return nodeReply{kind: rHeld}
	}
	return unexpected("refresh.lua", v)
}

// parseTTL reads ttl.lua's reply: the least remaining PTTL in ms, 0 when
// the keys are not the token's.
func parseTTL(v any, err error) nodeReply {
	if err != nil {
		return failedReply(err)
	}
	n, ok := v.(int64)
	switch {
	case !ok || n < 0:
		return unexpected("ttl.lua", v)
	case n == 0:
		return nodeReply{kind: rLost}
	}
	return nodeReply{kind: rKept, value: n}
}

// Counts says how the nodes answered the last round of an operation.
type Counts struct {
	Nodes      int // nodes of the quorum
	Held       int // a key held by another token
	Recovering int // a node that takes nothing yet (docs/quorum.md)
	Taken      int // keys taken or kept (obtain: taken, confirmed or low; refresh, TTL: held by the token)
	Confirmed  int // fenced obtain: the round's token confirmed
	Lost       int // keys no longer the token's
	Failed     int // no answer (an error)
}

// verdict is what an acquisition does after a round.
type verdict uint8

const (
	again   verdict = iota // send the next round
	issue                  // the token is issued: the lock is obtained
	abandon                // not obtained: release where the keys may be ours
)

// acquisition is the client side of one attempt to obtain a lock, as a
// state machine: the engine runs its rounds on real nodes, the model
// checker on simulated ones. Round 1 is obtain.lua to every node with the
// proposed token; later rounds are confirm.lua to the nodes that took the
// keys, with a higher token.
type acquisition struct {
	fenced  bool
	ttl     time.Duration
	sent    time.Time // round 1's send time: the validity counts from it
	round   int       // 1 for obtain.lua, then 2, 3, … for confirm.lua
	token   int64     // the round's token (fenced)
	target  []bool    // the nodes of the round
	touched []bool    // the nodes where this attempt may have written the keys
	high    int64     // the highest counter seen
	counts  Counts    // of the last round
	expired bool      // the validity ran out
}

// newAcquisition starts an attempt on n nodes, sent at sent, proposing
// above the wall clock wallMicros and the highest token seen.
func newAcquisition(n int, fenced bool, ttl time.Duration, sent time.Time, wallMicros, seen int64) *acquisition {
	a := &acquisition{
		fenced:  fenced,
		ttl:     ttl,
		sent:    sent,
		round:   1,
		target:  make([]bool, n),
		touched: make([]bool, n),
	}
	for i := range a.target {
		a.target[i] = true
	}
	if fenced {
		a.token = propose(wallMicros, seen)
	}
	return a
}

// settle takes the replies of the current round (one per node; those of
// nodes outside the round are ignored), the last of which came at now,
// and says what comes next. For again, a.round, a.token and a.target
// describe the next round; for issue, a.token is the fence token (0
// unfenced); for abandon, a.touched names the nodes to release.
func (a *acquisition) settle(replies []nodeReply, now time.Time) verdict {
	m := Majority(len(replies))
	c := Counts{Nodes: len(replies)}
	next := make([]bool, len(replies))
	for i, r := range replies {
		if !a.target[i] {
			continue
		}
		switch r.kind {
		case rFailed:
			c.Failed++
			// A node that took the keys in round 1 and failed to answer a
			// later round may still hold them: it stays in the rounds. One
			// that failed round 1 may hold keys written by an earlier
			// attempt with the same token (before this round's send time),
			// so it never counts.
			a.touched[i] = true
			next[i] = a.round > 1
		case rHeld:
			c.Held++
		case rRecovering:
			c.Recovering++
		case rTaken:
			c.Taken++
			a.touched[i] = true
		case rConfirmed:
			c.Taken++
			c.Confirmed++
			a.touched[i] = true
			next[i] = true
		case rLow:
			c.Taken++
			a.touched[i] = true
			next[i] = true
			a.high = max(a.high, r.value)
		case rLost:
			c.Lost++
		}
	}
	a.counts = c
	if !inTime(a.sent, now, a.ttl) {
		a.expired = true
		return abandon
	}
	if c.Taken < m {
		if a.round == 1 || c.Taken+c.Failed < m {
			return abandon
		}
	}
	if !a.fenced || c.Confirmed >= m {
		return issue
	}
	q := nextToken(a.token, a.high)
	if a.round == maxRounds || q >= maxToken {
		return abandon
	}
	a.round++
	a.token = q
	a.target = next
	return again
}

// refreshVerdict says what a refresh's replies mean: renewed when a
// majority kept the keys; lost when that can no longer be, whatever the
// nodes that failed would have answered; otherwise neither (failures
// stand between: the caller may retry).
func refreshVerdict(replies []nodeReply) (c Counts, renewed, lost bool) {
	c = tally(replies)
	m := Majority(len(replies))
	return c, c.Taken >= m, c.Taken+c.Failed < m
}

// tally counts replies of one round of refresh.lua or ttl.lua.
func tally(replies []nodeReply) Counts {
	c := Counts{Nodes: len(replies)}
	for _, r := range replies {
		switch r.kind {
		case rKept:
			c.Taken++
		case rHeld:
			c.Held++
		case rLost:
			c.Lost++
		case rFailed:
			c.Failed++
		}
	}
	return c
}

// quorumTTL returns the time for which a majority of nodes still holds the
// keys, from ttl.lua's replies: the Majority-th largest remaining time,
// nodes that failed counting as 0. exact is false when the failed nodes
// could have made it longer.
func quorumTTL(replies []nodeReply) (ms int64, exact bool) {
	m := Majority(len(replies))
	known := make([]int64, 0, len(replies))
	failed := 0
	for _, r := range replies {
		switch r.kind {
		case rKept:
			known = append(known, r.value)
		case rFailed:
			failed++
		default:
			known = append(known, 0)
		}
	}
	// The k-th largest of known, 0 when there are fewer than k.
	kth := func(k int) int64 {
		if k > len(known) {
			return 0
		}
		sorted := append([]int64(nil), known...)
		for i := 1; i < len(sorted); i++ {
			for j := i; j > 0 && sorted[j] > sorted[j-1]; j-- {
				sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
			}
		}
		return sorted[k-1]
	}
	ms = kth(m)
	if failed == 0 {
		return ms, true
	}
	// With the failed nodes answering more than anyone, the Majority-th
	// largest is the (Majority − failed)-th of the rest.
	best := int64(-1)
	if m-failed >= 1 {
		best = kth(m - failed)
	}
	return ms, best == ms
}
