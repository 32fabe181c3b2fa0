package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock/internal/keyslot"
	"github.com/redislock/redislock/internal/script"
)

// The timing of elections (see docs/election.md).
const (
	// observeResync bounds how stale an observer can be after a lost
	// notification (a reconnect, a failover): it reads the election again
	// at least this often, whatever it has heard.
	observeResync = time.Second

	// observeRetry is how long an observer waits after a failed read or a
	// broken notification connection before it tries again.
	observeRetry = 100 * time.Millisecond

	// abandonTimeout bounds the clean-up of a Campaign that failed (see
	// Election.abandon), so that a Redis that cannot be reached does not
	// hold the caller long after its context ended.
	abandonTimeout = 250 * time.Millisecond

	// campaignRound is how long one obtain of a Campaign whose context has
	// no deadline waits before it starts again (the lock's wait is bounded
	// by its TTL when the context has no deadline; a campaign is not).
	campaignRound = time.Hour
)

// Election is a leader election on one name: at most one campaigner leads at
// a time, and each leadership has a term (a fencing token) greater than
// every earlier one. Make it with [Client.Election]. It holds no state but
// its names, so it is safe for concurrent use, and any number of Election
// values for one name (in any number of processes) take part in the same
// election.
type Election struct {
	client  *Client
	name    string // the election key
	termKey string // the term counter: the lock's fence key
	channel string // where the election's scripts publish changes
	sharded bool   // SPUBLISH/SSUBSCRIBE (Redis Cluster) instead of PUBLISH/SUBSCRIBE
	err     error  // a bad name: every method returns it
}

// Election returns the election on name. The leader holds name as a lock
// key; the election also uses a term counter and a channel in name's hash
// slot ("name:redislock:term" and "name:redislock:leader" when name has a
// hash tag, "{name}:redislock:term:untagged" and so on when it has none),
// and the wait queue of [WaitForRelease] while campaigners wait. It sends nothing. An empty name,
// or one that contains "}" without a hash tag, makes every method fail with
// [ErrInvalidKey] (and Observe's channel close at once); a nil Client makes
// them fail with [ErrNilClient].
func (c *Client) Election(name string) *Election {
	e := &Election{client: c, name: name}
	switch {
	case c == nil || c.client == nil:
		e.err = ErrNilClient
		return e
	case name == "":
		e.err = fmt.Errorf("%w: empty election name", ErrInvalidKey)
		return e
	}
	// As the wait queues of WaitForRelease are named (internal/handoff): a
	// name without hash tag is put in braces, which keeps its slot, and
	// marked, so that "job" and "{job}" do not share a counter.
	base, mark := name, ""
	if !keyslot.HasTag(name) {
		if strings.IndexByte(name, '}') >= 0 {
			e.err = fmt.Errorf("%w: election name %q contains \"}\" without a hash tag", ErrInvalidKey, name)
			return e
		}
		base, mark = "{"+name+"}", ":untagged"
	}
	e.termKey = base + ":redislock:term" + mark
	e.channel = base + ":redislock:leader" + mark
	e.sharded = c.cluster
	return e
}

// Name returns the election's name, its key.
func (e *Election) Name() string {
	if e == nil {
		return ""
	}
	return e.name
}

func (e *Election) check(ctx context.Context) error {
	if e == nil || e.client == nil {
		return ErrNilClient
	}
	if e.err != nil {
		return e.err
	}
	return checkCall(ctx, e.client.client)
}

func (e *Election) publishFlag() string {
	if e.sharded {
		return "1"
	}
	return "0"
}

// Campaign blocks until the caller is elected leader with value, or ctx
// ends. Campaigners wait in line ([WaitForRelease]): when the leader resigns
// the longest-waiting campaigner is elected in the same instant, and when a
// leader dies one is elected as soon as its key expires, at most ttl after
// its last refresh. The leadership is kept alive in the background (see
// [Leadership]) with ttl as each lease; ttl bounds how long a crashed
// leader blocks the election.
//
// Errors, with nothing left behind (no key, no place in the line):
//   - [ErrInvalidTTL] (ttl below 1 ms), [ErrInvalidKey], [ErrNilClient],
//     [ErrNilContext]: bad input, before anything is sent.
//   - an error matching both [ErrNotObtained] and ctx.Err(): ctx ended
//     first.
//   - a Redis error that is not transient (NOPERM, a closed client).
//
// Transient Redis errors (lost connections, failovers) are retried until
// ctx ends. Because a failure can leave it unknown whether the last
// attempt took the key (its reply was lost), a failed Campaign deletes the
// key if its token holds it, with one more script call, bounded by 250 ms
// after ctx ended; if Redis cannot be reached then, the key expires after
// ttl. Cancelling ctx ends a waiting Campaign at once, except for the one
// campaigner per client that blocks on Redis (see [WaitForRelease]), which
// notices within its block (at most about 1 s).
func (e *Election) Campaign(ctx context.Context, value string, ttl time.Duration) (*Leadership, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	ttl = time.Duration(ms) * time.Millisecond
	token := newToken()
	opt := &Options{RetryStrategy: WaitForRelease(nil), FenceKey: e.termKey, Metadata: "0:" + value, Token: token}
	_, bounded := ctx.Deadline()
	// Hooks see one obtain call, whatever the rounds (hook.go).
	parent := ctx
	obs := observe(&e.client.hooks, KindElection, e.name, ttl)
	ctx = obs.obtainStart(parent)
	for {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if !bounded {
			wctx, cancel = context.WithTimeout(ctx, campaignRound)
		}
		lock, err := e.client.obtain(wctx, []string{e.name}, ttl, opt, &obs)
		cancel()
		if err == nil {
			lead, err := e.elected(ctx, lock, value, ttl, obs)
			if lead != nil || err != nil {
				if !obs.reported() {
					obs.obtained(ctx, nil, err, nil)
				}
				return lead, err
			}
			if obs.reported() { // elected, and lost at once: a new call
				obs = observe(&e.client.hooks, KindElection, e.name, ttl)
				ctx = obs.obtainStart(parent)
			}
			continue // lost at once: campaign again
		}
		if ctx.Err() == nil && !bounded && errors.Is(err, ErrNotObtained) {
			continue
		}
		if ctx.Err() == nil && script.Transient(err) && sleepCtx(ctx, observeRetry) {
			continue
		}
		e.abandon(ctx, token)
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = &waitError{ctx: ctx.Err()}
		}
		obs.obtained(ctx, nil, err, nil)
		return nil, err
	}
}

// waitError is a Campaign that ended with its context after a Redis error:
// it matches ErrNotObtained and the context's error, as the lock's do.
type waitError struct{ ctx error }

func (e *waitError) Error() string   { return ErrNotObtained.Error() + ": " + e.ctx.Error() }
func (e *waitError) Unwrap() []error { return []error{ErrNotObtained, e.ctx} }

// elected makes a Leadership of the lock just obtained: it announces it
// (the proclaim script with the value it was elected with) and starts its
// keep-alive. It returns (nil, nil) when the key was lost already, so that
// Campaign goes on. It reports the campaign's end to obs (the hooks) once
// elected, before the keep-alive starts, so that a loss comes after it.
func (e *Election) elected(ctx context.Context, lock *Lock, value string, ttl time.Duration, obs *observation) (*Leadership, error) {
	reply, err := electionProclaimScript.Run(ctx, e.client.client, []string{e.name, e.channel}, lock.tokenArg, value, e.publishFlag()).Int64Slice()
	switch {
	case err == nil && (len(reply) == 0 || reply[0] != 1):
		lock.lease.Lost(time.Now())
		return nil, nil
	case err != nil && ctx.Err() != nil:
		lock.obs = nil        // a clean-up, not a resignation
		_ = lock.Release(ctx) // best effort: the caller gave up; the key expires otherwise
		return nil, &waitError{ctx: ctx.Err()}
	}
	lead := &Leadership{election: e, lock: lock, value: value}
	obs.obtained(ctx, lead, nil, nil)
	// A failed announcement (Redis error) costs observers up to
	// observeResync; the leadership itself is sound.
	ka, err := lock.KeepAlive(ttl, nil)
	if err != nil {
		_ = lock.Release(ctx) // best effort, as above
		if errors.Is(err, ErrLockNotHeld) || errors.Is(err, ErrLockLost) {
			return nil, nil
		}
		return nil, err
	}
	lead.keepAlive = ka
	return lead, nil
}

// abandon deletes the election key if token holds it, in case the last
// attempt of a Campaign that failed took it while its reply was lost. Best
// effort, one script call bounded by abandonTimeout even when ctx has ended.
func (e *Election) abandon(ctx context.Context, token string) {
	l, err := e.client.Attach([]string{e.name}, token, 0)
	if err != nil {
		return
	}
	l.obs = nil // a clean-up, not a release for the hooks
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer cancel()
	_ = l.Release(actx) // ErrLockNotHeld is the usual outcome: nothing was taken
}

// LeaderInfo describes the current leader of an election.
type LeaderInfo struct {
	Value string        // the value it was elected with, or proclaimed since
	Term  int64         // its term: the fence token of its leadership
	TTL   time.Duration // time left on its key (it is refreshed while the leader lives); -1 ms if it has no expiry
}

// Leader returns the current leader of the election, in one script call
// that blocks for a round trip. It returns [ErrNoLeader] when nobody leads
// (also for the instant in which a resigning leader hands over), the
// Redis error as it is, or [ErrUnexpectedReply]. Bad input gives the errors
// of [Election.Campaign] before anything is sent.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	if err := e.check(ctx); err != nil {
		return LeaderInfo{}, err
	}
	st, err := e.read(ctx)
	if err != nil {
		return LeaderInfo{}, err
	}
	if !st.leads {
		return LeaderInfo{}, ErrNoLeader
	}
	return LeaderInfo{Value: st.value, Term: st.term, TTL: st.ttl}, nil
}

// read runs the leader script.
func (e *Election) read(ctx context.Context) (leaderState, error) {
	reply, err := electionLeaderScript.Run(ctx, e.client.client, []string{e.name, e.termKey}).Slice()
	if err != nil {
		return leaderState{}, err
	}
	bad := func() (leaderState, error) {
		return leaderState{}, fmt.Errorf("%w: leader of %q: %#v", ErrUnexpectedReply, e.name, reply)
	}
	if len(reply) < 2 {
		return bad()
	}
	flag, ok1 := reply[0].(int64)
	term, ok2 := reply[1].(int64)
	if !ok1 || !ok2 {
		return bad()
	}
	if flag == 0 {
		return leaderState{term: term}, nil
	}
	if len(reply) != 5 {
		return bad()
	}
	rev, ok1 := reply[2].(int64)
	pttl, ok2 := reply[3].(int64)
	value, ok3 := reply[4].(string)
	if !ok1 || !ok2 || !ok3 {
		return bad()
	}
	return leaderState{leads: true, term: term, rev: rev, ttl: time.Duration(pttl) * time.Millisecond, value: value}, nil
}

// Run campaigns with value and ttl ([Election.Campaign]), runs fn under the
// leadership's context ([Leadership.Context]: it is cancelled, with an
// error matching [ErrLockLost] as its cause, if the leadership is lost),
// then resigns ([Leadership.Resign]), even when fn panics. It returns the
// error of Campaign when not elected, else fn's error, else Resign's
// ([ErrLockNotHeld] when the leadership was lost before fn returned).
func (e *Election) Run(ctx context.Context, value string, ttl time.Duration, fn func(ctx context.Context, lead *Leadership) error) (err error) {
	lead, err := e.Campaign(ctx, value, ttl)
	if err != nil {
		return err
	}
	defer func() {
		if rerr := lead.Resign(ctx); err == nil {
			err = rerr
		}
	}()
	lctx, cancel := lead.Context(ctx)
	defer cancel()
	return fn(lctx, lead)
}

// Leadership is a campaigner's leadership of an election, from
// [Election.Campaign]. Its keep-alive, started by Campaign, refreshes the
// election key in a goroutine of its own (see [KeepAlive]) and signals the
// loss of the leadership before another campaigner can be elected, as long
// as the clocks behave (see [KeepAliveOptions.Margin]): [Leadership.Done]
// is closed and [Leadership.Context] cancelled. [Leadership.Resign] stops
// it. Pass [Leadership.Term] to the resources the leader writes: they
// refuse writes with a lower term than the highest they have seen, which
// makes a deposed leader harmless.
//
// Its methods are safe for concurrent use and accept a nil *Leadership (it
// behaves as one that has ended).
type Leadership struct {
	election  *Election
	lock      *Lock
	keepAlive *KeepAlive

	mu       sync.Mutex // serialises Proclaim and Resign
	value    string
	resigned bool // a Resign ended the leadership
}

// Term returns the leadership's term: the fence token of its election key,
// greater than the term of every earlier leadership of the election (0 for
// a nil Leadership).
func (l *Leadership) Term() int64 {
	if l == nil {
		return 0
	}
	return l.lock.FenceToken()
}

// Value returns the value the leader was elected with, or the last one
// proclaimed ("" for a nil Leadership).
func (l *Leadership) Value() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Token returns the token of the leadership's lock on the election key
// ("" for a nil Leadership).
func (l *Leadership) Token() string {
	if l == nil {
		return ""
	}
	return l.lock.Token()
}

// Done returns a channel that is closed when the leadership ends: lost, or
// resigned. [Leadership.Err] then says which. A nil Leadership returns a
// closed channel.
func (l *Leadership) Done() <-chan struct{} {
	if l == nil {
		return (*KeepAlive)(nil).Done()
	}
	return l.keepAlive.Done()
}

// Err returns nil while the leadership lasts; once Done is closed, an error
// matching [ErrLockLost] when it was lost (see [KeepAlive] for the causes it
// also matches), or [ErrKeepAliveStopped] after [Leadership.Resign]. A nil
// Leadership returns ErrKeepAliveStopped.
func (l *Leadership) Err() error {
	if l == nil {
		return ErrKeepAliveStopped
	}
	return l.keepAlive.Err()
}

// Context returns a context derived from parent that is cancelled when the
// leadership ends, with [Leadership.Err] as its cause: an error matching
// [ErrLockLost] when it is lost (before another campaigner can be elected,
// while the clocks behave), [ErrKeepAliveStopped] after Resign. Call the
// CancelFunc when done; parent must not be nil.
func (l *Leadership) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if l == nil {
		return (*KeepAlive)(nil).Context(parent)
	}
	return l.keepAlive.Context(parent)
}

// ValidUntil returns the time until which the leadership is certainly held
// (see [KeepAlive.ValidUntil]); the zero Time for a nil Leadership.
func (l *Leadership) ValidUntil() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.keepAlive.ValidUntil()
}

// Proclaim changes the leader's value to value, keeping its term, and tells
// the observers ([Election.Observe]), in one script call that blocks for a
// round trip. It succeeds only while the caller still leads: when the
// leadership has ended it returns [ErrNotLeader] (matching [ErrLockLost]
// too when it was lost), sending nothing if that was known; when Redis
// finds the key gone or taken, the leadership is marked lost (Done is
// closed). A Redis error is returned as it is; the value may then have
// changed on Redis or not ([Leadership.Value] keeps the old one). Proclaim
// calls of one Leadership run one at a time. Bad input: [ErrNilContext].
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if l == nil {
		return ErrNotLeader
	}
	if err := checkCall(ctx, l.lock.client); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resigned {
		return fmt.Errorf("%w: it resigned", ErrNotLeader)
	}
	if err := l.keepAlive.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	if !time.Now().Before(l.keepAlive.ValidUntil()) {
		return fmt.Errorf("%w: %w: its lease ran out", ErrNotLeader, ErrLockLost)
	}
	e := l.election
	sent := time.Now()
	reply, err := electionProclaimScript.Run(ctx, e.client.client, []string{e.name, e.channel}, l.lock.tokenArg, value, e.publishFlag()).Int64Slice()
	if err != nil {
		return err
	}
	if len(reply) == 0 || reply[0] != 1 {
		l.lock.lease.Lost(sent)
		return fmt.Errorf("%w: %w: the election key is gone or held by another", ErrNotLeader, ErrLockLost)
	}
	l.value = value
	return nil
}

// Resign ends the leadership: it stops the keep-alive (Done is closed, Err
// is [ErrKeepAliveStopped], the contexts of [Leadership.Context] are
// cancelled) before it sends anything, then releases the election key in
// one script call, which hands it at once to the longest-waiting campaigner,
// or deletes it when none waits; then it tells the observers with one more
// script call (whose failure is ignored: observers re-read within a second).
// The leadership has ended whatever the outcome: a Resign that fails does
// not make it lead again.
//
// It returns nil once the key is released, and on every later call. It
// returns [ErrLockNotHeld] when the leadership had been lost before (the key
// expired or was taken); later calls return nil. A Redis error is returned
// as it is; the key then expires after its TTL, unless a later Resign
// releases it. When ctx has already ended, Resign still runs, bounded by a
// timeout of its own of 5 seconds, as [Lock.Release] does.
func (l *Leadership) Resign(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if ctx == nil {
		return ErrNilContext
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resigned {
		return nil
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
	}
	err := l.lock.Release(ctx)
	switch {
	case errors.Is(err, ErrLockNotHeld):
		l.resigned = true
		return err
	case err != nil:
		return err
	}
	l.resigned = true
	e := l.election
	_ = electionResignedScript.Run(ctx, e.client.client, []string{e.channel}, strconv.FormatInt(l.Term(), 10), e.publishFlag()).Err()
	return nil
}

// LeaderEventKind says what changed in an election.
type LeaderEventKind int

// The kinds of [LeaderEvent].
const (
	// LeaderElected: a leader with a new term leads (or, as the first event
	// of an observer, leads already).
	LeaderElected LeaderEventKind = iota + 1
	// LeaderProclaimed: the leader of the same term proclaimed a new value.
	LeaderProclaimed
	// NoLeader: the leadership of Term ended (resigned, expired, or
	// replaced by a later term the observer reports next), or, as the
	// first event, nobody leads (Term is then the last term issued, 0 if
	// none).
	NoLeader
)

// String returns the kind's name.
func (k LeaderEventKind) String() string {
	switch k {
	case LeaderElected:
		return "elected"
	case LeaderProclaimed:
		return "proclaimed"
	case NoLeader:
		return "no leader"
	}
	return "LeaderEventKind(" + strconv.Itoa(int(k)) + ")"
}

// LeaderEvent is one change of an election, as [Election.Observe] reports it.
type LeaderEvent struct {
	Kind  LeaderEventKind
	Term  int64  // the term of the leadership the event is about
	Value string // the leader's value (empty for NoLeader)
}

// leaderState is what an observer knows of an election, from a read or a
// notification.
type leaderState struct {
	leads bool
	term  int64
	rev   int64 // the value's revision within the term
	ttl   time.Duration
	value string
}

// observer orders what it hears into events: reads and notifications come
// over different connections, so one can be older than what was already
// reported; the term, then the revision within a term, then "ended" order
// them.
type observer struct {
	known bool
	cur   leaderState
}

// update returns the events that x makes, in order, and records x.
func (o *observer) update(x leaderState, out []LeaderEvent) []LeaderEvent {
	switch {
	case !o.known:
		o.known, o.cur = true, x
		if x.leads {
			return append(out, LeaderEvent{Kind: LeaderElected, Term: x.term, Value: x.value})
		}
		return append(out, LeaderEvent{Kind: NoLeader, Term: x.term})
	case x.term < o.cur.term:
		return out
	case x.term == o.cur.term:
		switch {
		case !o.cur.leads: // the term has ended: nothing of it is news
		case !x.leads:
			o.cur.leads = false
			out = append(out, LeaderEvent{Kind: NoLeader, Term: x.term})
		case x.rev > o.cur.rev:
			changed := x.value != o.cur.value
			o.cur.rev, o.cur.value = x.rev, x.value
			if changed {
				out = append(out, LeaderEvent{Kind: LeaderProclaimed, Term: x.term, Value: x.value})
			}
		}
		return out
	}
	// A later term: the one reported has ended.
	if o.cur.leads {
		out = append(out, LeaderEvent{Kind: NoLeader, Term: o.cur.term})
	}
	o.cur = x
	if x.leads {
		out = append(out, LeaderEvent{Kind: LeaderElected, Term: x.term, Value: x.value})
	}
	return out
}

// parseNotice parses a message of the election's scripts (see
// election_proclaim.lua and election_resigned.lua).
func parseNotice(payload string) (leaderState, bool) {
	parts := strings.SplitN(payload, ":", 5)
	switch {
	case len(parts) == 2 && parts[0] == "N":
		term, err := strconv.ParseInt(parts[1], 10, 64)
		return leaderState{term: term}, err == nil
	case len(parts) == 5 && parts[0] == "L":
		term, err1 := strconv.ParseInt(parts[1], 10, 64)
		rev, err2 := strconv.ParseInt(parts[2], 10, 64)
		pttl, err3 := strconv.ParseInt(parts[3], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return leaderState{}, false
		}
		return leaderState{leads: true, term: term, rev: rev, ttl: time.Duration(pttl) * time.Millisecond, value: parts[4]}, true
	}
	return leaderState{}, false
}

// subscriber and shardedSubscriber are the parts of go-redis clients that
// Observe uses for notifications.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

type shardedSubscriber interface {
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Observe reports every change of the election on the returned channel, in
// order: first the current state (LeaderElected, or NoLeader), then each new
// leader, each value it proclaims and each end of a leadership (NoLeader),
// including the expiry of a leader that crashed. A leadership that ends
// because the next one began is reported as NoLeader for its term just
// before the LeaderElected of the next.
//
// Observe starts one goroutine, which owns a notification connection (a
// pub/sub subscription of the Redis client; sharded, in the election's hash
// slot, on a Redis Cluster) and ends when ctx ends: it then closes the
// channel. It does not block on the reader beyond ctx: an event waits until
// it is received or ctx ends. Changes made by the election's scripts
// (Campaign, Proclaim, Resign) reach observers at once; the expiry of a
// crashed leader, which Redis does not notify, is read at the moment the
// leader's key expires. A notification that is lost (a dropped
// connection, a failover) is made good by a re-read within one second:
// every observer reads the election at least once a second, and at once
// after its subscription is made again. What began and ended entirely
// within such a gap (a whole term, or an intermediate value) is not
// reported; the events still come in order, and the last one reported is
// the current state.
//
// A client that has no Subscribe method (a [RedisClient] that only runs
// scripts) is read once a second, without notifications. On a Redis
// Cluster, notifications are sharded only between clients that [New] knows
// as *redis.ClusterClient: a campaigner whose cluster client is wrapped
// publishes with PUBLISH, which sharded observers do not hear; they see its
// changes by their re-reads. Redis errors are
// retried every 100 ms until ctx ends. With bad input (see [Client.Election])
// or a nil ctx, the channel is closed at once.
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent)
	if e.check(ctx) != nil {
		close(ch)
		return ch
	}
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- LeaderEvent) {
	defer close(ch)
	var ps *redis.PubSub
	if s, ok := e.client.client.(shardedSubscriber); ok && e.sharded {
		ps = s.SSubscribe(ctx, e.channel)
	} else if s, ok := e.client.client.(subscriber); ok && !e.sharded {
		ps = s.Subscribe(ctx, e.channel)
	}
	now := time.Now()
	next := now // the next read
	if ps != nil {
		defer func() { _ = ps.Close() }()
		// Closing the subscription ends a receive in progress when ctx ends.
		stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
		defer stop()
		// The first read follows the subscription's confirmation, so that
		// no change between the two is missed; the timer is only a backstop.
		next = now.Add(observeResync)
	}
	var o observer
	var events []LeaderEvent
	emit := func(x leaderState) bool {
		events = o.update(x, events[:0])
		for _, ev := range events {
			select {
			case ch <- ev:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	// expiry schedules a read when the leader's key can expire.
	expiry := func(x leaderState, heard time.Time) {
		if x.leads && x.ttl >= 0 {
			if at := heard.Add(x.ttl + time.Millisecond); at.Before(next) {
				next = at
			}
		}
	}
	for ctx.Err() == nil {
		wait := time.Until(next)
		if wait <= 0 {
			sent := time.Now()
			x, err := e.read(ctx)
			if err != nil {
				next = time.Now().Add(observeRetry)
				continue
			}
			if !emit(x) {
				return
			}
			next = sent.Add(observeResync)
			expiry(x, sent)
			continue
		}
		if ps == nil {
			if !sleepCtx(ctx, wait) {
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
			if !sleepCtx(ctx, observeRetry) {
				return
			}
			next = time.Now()
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			next = heard
		case *redis.Message:
			x, ok := parseNotice(m.Payload)
			if !ok {
				continue
			}
			if !emit(x) {
				return
			}
			expiry(x, heard)
		}
	}
}

// sleepCtx waits for d or until ctx ends; it reports whether ctx is still
// live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
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
