package handoff

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The timing of waiting.
const (
	// firstBlock and maxBlock bound one blocking call (BLPOP): a waiter
	// blocks for as long as it has already waited, but at least firstBlock
	// and at most maxBlock, then attempts again (renewing its
	// registration): the context is checked between blocks (go-redis
	// cannot interrupt a blocking command).
	firstBlock = 250 * time.Millisecond
	maxBlock   = time.Second

	// minBlock is the shortest block worth a round trip; with less time
	// left, a waiter sleeps on a local timer instead.
	minBlock = 10 * time.Millisecond

	// Registration is how long a waiter's registration lasts without
	// renewal. Every attempt renews it, and a waiter attempts at least
	// every half of it (a leader after each block). It outlasts a block
	// that ends a tick late at hz 1.
	Registration = 3 * time.Second

	// leaveTimeout bounds the leave script of a waiter that gives up.
	leaveTimeout = 5 * time.Second
)

// RegistrationArg is Registration as a script argument, in milliseconds:
// a constant string, so that passing it allocates nothing.
const RegistrationArg = "3000"

// The last argument of the waiting script (see the package doc): whether
// the attempt is the waiter's first.
const (
	firstAttempt   = "1"
	laterAttempt   = "0"
	requeueAttempt = "2" // the first, sent with the first block (Request.Requeue)
)

// Request is one wait for the keys of a lock (or of any resource that
// hands over the same way).
type Request struct {
	// Client runs the scripts. A client with a Pipeline method blocks on
	// Redis between attempts; any other polls.
	Client redis.Scripter
	// Keys are the lock keys, whose companions (see [Companions]) the
	// wait uses.
	Keys []string
	// Obtain is the waiting script (obtain.lua's contract, see the package
	// doc); CallKeys and CallArgs are its KEYS and ARGV before the waiter's
	// own (the lock keys and, say, a fence key; the token, metadata, …).
	Obtain   Script
	CallKeys []string
	CallArgs []any
	// PollArgs, when not nil, are the ARGV of a plain attempt (polling)
	// in place of CallArgs: those of a script that replies a plain
	// attempt's expiry code only when asked.
	PollArgs []any
	// Leave is leave.lua: a waiter that gives up takes back its
	// registration and passes on a grant it was woken with.
	Leave Script
	// TTL bounds the wait when ctx has no deadline, and a block lasts at
	// most half of it (a lock obtained at the end of a block counts its
	// lease from the block's start).
	TTL time.Duration
	// Backoff returns the next wait between attempts where events cannot
	// be used (after a transient error, while polling); zero or less gives
	// up.
	Backoff func() time.Duration
	// MaxAttempts, when positive, bounds the attempts: a block that ends
	// without the lock counts one.
	MaxAttempts int
	// Transient reports whether an error is worth another attempt.
	Transient func(error) bool
	// Shared reports that the keys, once obtained, admit more holders (the
	// read holds of a read-write lock): when a wait obtains them at the
	// end of a block, the other waits of its group attempt at once instead
	// of waiting for the lead, so that they enter together.
	Shared bool
	// Requeue says that the caller handed these keys over to a waiter a
	// moment ago (its release found one registered) and asks for them
	// again: the keys are most likely held or reserved, so the wait's
	// first attempt (which registers it, at the back of the line) goes in
	// one round trip with its first block. That first attempt never takes
	// the keys: a free key goes to the oldest live waiter of its line,
	// which may be this one (the waiting script's requeue attempt,
	// obtain.lua's ARGV[7] "2"). It applies to one key, on a client that
	// blocks. When other waits of the Registry are in the key's group, the
	// wait sends nothing until the lead passes to it, then that round
	// trip. Otherwise (several keys, a client that cannot block, too
	// little time to block) the wait starts as any other. The first
	// attempt is not counted as an attempt of its own (MaxAttempts,
	// Attempted).
	Requeue bool
	// ID, when not empty, is the waiter's id in the lines (see [NewID]);
	// otherwise the wait makes one from TTL. A caller that registered the
	// wait before it began names it here.
	ID string
	// Registered, when not zero, says that a script of the caller
	// registered this wait under ID in the line of its one key (a release
	// that handed the key over and asked for it again, release.lua), at a
	// time after Registered: the wait then blocks at once, with no
	// attempt before (or, when other waits of the Registry are in the
	// key's group, waits for the lead as a registered member). The
	// registration must still be live when the block ends (the Client's
	// [Hint] sees to it). One key only; Requeue is then ignored.
	Registered time.Time
	// Attempted, when not nil, is called on the waiting goroutine after
	// each attempt: whether it obtained the keys, whether it was sent
	// right after a block on Redis (obtaining then means a release handed
	// the keys over, or the holder expired during the block), and its
	// error (nil when the keys were held).
	Attempted func(obtained, blocked bool, err error)
}

// Outcome is the result of a wait that obtained the keys.
type Outcome struct {
	// Obtained reports whether the keys were obtained. It can be true with
	// an [EndedError]: the lock came with a block that outlasted the
	// context, and the caller must release it.
	Obtained bool
	// Value is the waiting script's reply (obtain.lua: the fence token).
	Value int64
	// Sent is a time before the obtaining script ran: the lease of the
	// keys counts from it.
	Sent time.Time
	// Companions are the keys' [Companions] when the wait used them (nil
	// when it polled), for the release to hand the keys over with.
	Companions []string
	// Alone reports that the wait began as a requeue or [Request.Registered]
	// and led its group from its first block: no other wait of the
	// Registry waited for the key through the client.
	Alone bool
}

// ErrGaveUp is returned by [Registry.Wait] when the keys stayed held and
// [Request.MaxAttempts] or [Request.Backoff] ended the wait.
var ErrGaveUp = errors.New("handoff: gave up")

// EndedError is returned by [Registry.Wait] when its context ended (or the
// TTL-long wait ran out) first. Err is the context's error.
type EndedError struct{ Err error }

func (e *EndedError) Error() string { return "handoff: wait ended: " + e.Err.Error() }

// Unwrap returns the context's error.
func (e *EndedError) Unwrap() error { return e.Err }

// Wait runs attempts of req.Obtain until one obtains the keys, the wait
// ends (ctx, its deadline or TTL, MaxAttempts, Backoff) or an error that is
// not transient comes back. It blocks the calling goroutine and starts no
// other. Between attempts it blocks on the waiter's grant list, sharing one
// connection with the other waits of r for that key and client, or polls
// with req.Backoff when the client cannot block or the server refuses
// BLPOP.
//
// It returns the Outcome and nil on success; an [*EndedError] when the
// context ended (with Outcome.Obtained true if an attempt in flight
// obtained the keys as it ended); [ErrGaveUp]; the last transient error
// when Backoff gave up while Redis kept failing; or a final error. After a
// failure nothing of the wait is left registered (a leave script is sent,
// even when ctx has ended, and passes on a key reserved for the waiter); a
// wait that dies leaves registrations that lapse by themselves.
func (r *Registry) Wait(ctx context.Context, req *Request) (Outcome, error) {
	w := r.newWait(req)
	w.rc = redisConn{reg: r, client: req.Client, obtain: req.Obtain, leaveWith: req.Leave}
	w.conn = &w.rc
	longest := time.Duration(0)
	if p, ok := req.Client.(pipeliner); ok {
		w.rc.pipe, longest = p, maxBlock
	}
	return w.run(ctx, longest)
}

// The states of a wait.
type state uint8

const (
	attempting state = iota // send an attempt without blocking
	requeuing               // lead the group, not registered yet: the first attempt and a block, in one round trip (Request.Requeue)
	blocking                // lead the group: block on the grant lists of its members
	sleeping                // in the group: wait for the lead, or until it is time to attempt
	pausing                 // after a transient error: sleep the backoff, then attempt
	polling                 // cannot block: attempt, then sleep the backoff or until the holder expires
	finished
)

// wait is one [Registry.Wait] call: its state and what its attempts send.
type wait struct {
	reg   *Registry
	req   *Request
	conn  conn
	state state

	m     *member // mem
	mem   member
	rc    redisConn // the conn of a wait on a server
	g     *group    // the group of the line the member waits in; nil when polling
	lines []string  // the line of each lock key
	comp  []string  // Companions of the keys: the leave script's keys
	keys  []string  // the waiting script's keys: CallKeys, lines, liveness sets
	args  []any     // its args: CallArgs, id, registration, first
	first [8]any    // storage of a requeue's first attempt's args, when they fit

	registered bool          // in a line: the last attempt failed, or may have
	sentWaiter bool          // an attempt with the waiter's part was sent: it may be registered
	afterBlock bool          // the next attempt follows a block
	renew      time.Time     // when the registration wants renewing (by an attempt); zero: not registered
	slack      time.Duration // how late the server may end a block
	block      time.Duration // how long the next block lasts
	attempts   int
	last       reply // what the last failed attempt found
	lastErr    error // the last transient error
	out        Outcome
	err        error
}

// newWait returns a wait for req, without its conn.
func (r *Registry) newWait(req *Request) *wait {
	w := &wait{reg: r, req: req}
	w.m = &w.mem
	id := req.ID
	if id == "" {
		id = newID(r.process, req.TTL)
	}
	w.m.init(id)
	return w
}

// run is Wait over c, a conn whose client blocks for at most longest (0:
// it cannot block).
func (r *Registry) run(ctx context.Context, req *Request, c conn, longest time.Duration) (Outcome, error) {
	w := r.newWait(req)
	w.conn = c
	return w.run(ctx, longest)
}

// run runs the wait, whose conn blocks for at most longest (0: it cannot
// block).
func (w *wait) run(ctx context.Context, longest time.Duration) (Outcome, error) {
	var cancel context.CancelFunc
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, w.req.TTL)
		defer cancel()
	}
	defer w.m.stop()
	w.start(ctx, longest)
	for w.state != finished {
		switch w.state {
		case attempting, polling:
			w.attempt(ctx)
		case requeuing, blocking:
			w.blockOnce(ctx)
		case sleeping:
			w.sleep(ctx)
		case pausing:
			w.pause(ctx)
		}
	}
	w.leave(ctx)
	return w.out, w.err
}

// start prepares the keys and args of the attempts, and joins the group
// of the first key's line, so that the waits of this process wait in the
// order they called.
func (w *wait) start(ctx context.Context, longest time.Duration) {
	req := w.req
	companions, ok := Companions(req.Keys)
	if !ok {
		w.state = polling
		return
	}
	n := len(req.Keys)
	w.comp, w.lines = companions, companions[n:2*n]
	w.g = w.reg.join(req.Client, w.lines[0], w.m)
	if longest > 0 {
		w.slack = w.conn.tick(ctx)
		if rt, _ := clientLimits(req.Client); rt > 0 {
			// The reply to a block can come a tick late.
			longest = min(longest, rt-w.slack-100*time.Millisecond)
		}
	}
	if longest < firstBlock {
		// No pipelines, or a ReadTimeout too short for a blocking call
		// (go-redis would give up on the reply and close the connection).
		w.reg.leave(w.g, w.m)
		w.g = nil
		w.state = polling
		return
	}
	w.m.longest = longest
	keys := make([]string, 0, len(req.CallKeys)+2*n)
	w.keys = append(append(keys, req.CallKeys...), companions[n:]...)
	w.args = append(append(make([]any, 0, len(req.CallArgs)+3), req.CallArgs...), w.m.id, RegistrationArg, firstAttempt)
	w.state = attempting
	switch {
	case n != 1:
	case !req.Registered.IsZero():
		w.preRegistered(ctx)
	case req.Requeue:
		w.requeue(ctx)
	}
}

// firstBlockFor returns how long a wait that has not attempted yet blocks
// first, or 0 when it has too little time left to block.
func (w *wait) firstBlockFor(ctx context.Context) time.Duration {
	block := min(firstBlock, w.m.longest)
	if d, ok := ctx.Deadline(); ok {
		block = min(block, time.Until(d)-w.slack)
	}
	if block < minBlock {
		return 0
	}
	return block
}

// requeue makes a wait that has time enough to block skip its attempt
// alone. When it may lead its group at once (it is the group's only
// member, and one of the client's blocking connections is free) it starts
// in the requeuing state. When the group has other members, another wait
// of this process for the key leads or will: it starts sleeping,
// unregistered, and requeues when the lead passes to it (see sleep).
func (w *wait) requeue(ctx context.Context) {
	now := time.Now()
	block := w.firstBlockFor(ctx)
	if block == 0 {
		return
	}
	if w.g.leadAlone(w.m) {
		w.block, w.state, w.out.Alone = block, requeuing, true
		return
	}
	if w.g.others(w.m) {
		w.m.since, w.state = now, sleeping
	}
}

// preRegistered starts a wait that the caller's release registered (see
// Request.Registered): it blocks at once when it may lead its group alone,
// and otherwise sleeps in the group as a registered member. With too
// little time to block it attempts (and so renews the registration) as any
// wait does.
func (w *wait) preRegistered(ctx context.Context) {
	w.sentWaiter, w.registered, w.m.since = true, true, w.req.Registered
	// The release registered it for RegisteredLapse only.
	w.renew = w.req.Registered.Add(RegisteredLapse / 2)
	block := w.firstBlockFor(ctx)
	switch {
	case block == 0:
	case w.g.leadAlone(w.m):
		w.block, w.state, w.out.Alone = block, blocking, true
	default:
		w.state = sleeping
	}
}

// blockOnce makes the one block of a leader: BLPOP on the grant lists of
// its group's members, preceded, when requeuing, by the waiter's first
// attempt in the same round trip. A grant for another member wakes that
// member; the leader attempts next whatever came.
func (w *wait) blockOnce(ctx context.Context) {
	var first []any
	if w.state == requeuing {
		first = append(w.first[:0], w.args...)
		first[len(first)-1] = requeueAttempt
		w.sentWaiter, w.registered = true, true
	}
	lists := w.g.lists(w.m)
	popped, err := w.conn.block(ctx, w.keys, first, lists, w.block)
	w.g.unblock()
	w.block = 0
	if popped != "" && popped != w.m.grants {
		w.g.wake(popped)
	}
	switch {
	case err != nil && !w.req.Transient(err):
		// BLPOP refused (an ACL, a proxy): poll.
		w.leave(ctx)
		w.state = polling
		return
	case err != nil:
		w.lastErr = err
		w.state = pausing
		return
	case ctx.Err() != nil:
		w.finish(&EndedError{ctx.Err()})
		return
	}
	w.afterBlock = true
	w.state = attempting
}

// attempt sends one attempt: plain when polling, with the waiter's
// registration otherwise.
func (w *wait) attempt(ctx context.Context) {
	sent := time.Now()
	blocked := w.afterBlock
	w.afterBlock = false
	var (
		v   any
		err error
	)
	if w.state == polling {
		args := w.req.PollArgs
		if args == nil {
			args = w.req.CallArgs
		}
		v, err = w.conn.attempt(ctx, w.req.CallKeys, args)
	} else {
		// The first attempt is in no line yet.
		w.args[len(w.args)-1] = laterAttempt
		if !w.sentWaiter {
			w.args[len(w.args)-1] = firstAttempt
		}
		w.sentWaiter = true
		v, err = w.conn.attempt(ctx, w.keys, w.args)
	}
	w.attempts++
	w.lastErr = nil
	if err == nil {
		r, perr := parseReply(v, sent)
		if perr != nil {
			w.registered = w.state != polling
			w.finish(perr)
			return
		}
		if w.req.Attempted != nil {
			w.req.Attempted(r.obtained, blocked, nil)
		}
		if r.obtained {
			w.registered = false
			w.out = Outcome{Obtained: true, Value: r.value, Sent: sent, Alone: w.out.Alone}
			if blocked && w.req.Shared {
				w.g.wakeAll(w.m)
			}
			if w.state != polling {
				w.out.Companions = w.comp
			}
			w.finish(nil)
			return
		}
		if w.state != polling {
			if !w.registered {
				w.m.since = sent
			}
			w.registered, w.renew = true, sent.Add(Registration/2)
		}
		w.last = r
	} else if w.req.Attempted != nil {
		w.req.Attempted(false, blocked, err)
	}
	switch {
	case ctx.Err() != nil:
		w.registered = w.registered || (err != nil && w.state != polling)
		w.finish(&EndedError{ctx.Err()})
		return
	case err != nil && !w.req.Transient(err):
		// The script may have run: leave.lua is harmless.
		w.registered = w.state != polling
		w.finish(err)
		return
	case err != nil:
		w.lastErr = err
		if w.state != polling {
			w.state = pausing
			return
		}
	}
	if w.req.MaxAttempts > 0 && w.attempts >= w.req.MaxAttempts {
		w.finishGaveUp()
		return
	}
	if w.state == polling {
		w.pollSleep(ctx)
		return
	}
	w.state = sleeping
}

// sleep waits in the group of the line of the key that holds the waiter
// up, until it leads (then blocks) or it is time to attempt: when the
// holder can have expired, to renew the registration, or at the deadline,
// whichever comes first.
func (w *wait) sleep(ctx context.Context) {
	now := time.Now()
	until := now.Add(Registration / 2)
	if !w.renew.IsZero() && w.renew.Before(until) {
		until = w.renew
	}
	if !w.last.reserved && !w.last.expiry.IsZero() && w.last.expiry.Before(until) {
		until = w.last.expiry
	}
	if d, ok := ctx.Deadline(); ok && d.Before(until) {
		until = d
	}
	if until.Sub(now)-w.slack < minBlock {
		// Too close to the end to block (the server may end a block a tick
		// late): attempt again soon, as a poll would.
		if soon := now.Add(firstBlock); soon.Before(until) {
			until = soon
		}
	}
	line := w.lines[w.last.blocker]
	if w.g.line != line {
		w.reg.leave(w.g, w.m)
		w.g = w.reg.join(w.req.Client, line, w.m)
	}
	block, err := w.g.wait(ctx, w.m, until, w.slack)
	switch {
	case err != nil:
		w.finish(&EndedError{err})
	case block > 0 && !w.sentWaiter:
		// A requeue that joined its group (see requeue): it has not
		// attempted yet.
		w.block, w.state = block, requeuing
	case block > 0:
		w.block, w.state = block, blocking
	default:
		w.state = attempting
	}
}

// pause sleeps the next backoff after a transient error, then attempts
// without blocking; the wait ends when the backoff gives up.
func (w *wait) pause(ctx context.Context) {
	d := w.req.Backoff()
	if d <= 0 {
		w.finish(w.lastErr)
		return
	}
	if !w.m.sleep(ctx, d, false) {
		w.finish(&EndedError{ctx.Err()})
		return
	}
	w.state = attempting
}

// pollSleep sleeps the next backoff, or until the holder can have
// expired when that is sooner.
func (w *wait) pollSleep(ctx context.Context) {
	d := w.req.Backoff()
	if d <= 0 {
		w.finishGaveUp()
		return
	}
	if !w.last.expiry.IsZero() {
		if left := time.Until(w.last.expiry); left < d {
			d = max(left, time.Millisecond)
		}
	}
	if !w.m.sleep(ctx, d, false) {
		w.finish(&EndedError{ctx.Err()})
	}
}

// finishGaveUp ends the wait when the strategy gives up: with the last
// transient error when the last attempt failed on one.
func (w *wait) finishGaveUp() {
	if w.lastErr != nil {
		w.finish(w.lastErr)
		return
	}
	w.finish(ErrGaveUp)
}

// finish ends the wait with err.
func (w *wait) finish(err error) {
	w.err, w.state = err, finished
}

// leave takes the member out of its group and its registration out of
// the lines, passing on a key reserved for it.
func (w *wait) leave(ctx context.Context) {
	if w.g != nil {
		w.reg.leave(w.g, w.m)
		w.g = nil
	}
	if w.registered {
		w.registered = false
		w.conn.leave(ctx, w.comp, []any{w.m.id})
	}
}
