package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/election"
)

// Election is a leader election on one name: at most one campaigner leads at
// a time, and each leadership has a term (a fencing token) greater than
// every earlier one. Make it with [Client.Election]. It holds only its
// names, so it is safe for concurrent use, and all Election values for one
// name, in any number of processes, take part in the same election.
type Election struct {
	client  *Client
	name    string // the election key
	termKey string // the term counter: the lock's fence key
	channel string // where the election's scripts publish changes
	sharded bool   // SPUBLISH/SSUBSCRIBE (Redis Cluster) instead of PUBLISH/SUBSCRIBE
	err     error  // a bad name: every method returns it
}

// Election returns the election on name, whose keys are name and others
// in its hash slot (docs/election.md). It sends nothing. An empty name, or
// one that contains "}" without a hash tag, makes every method fail with
// [ErrInvalidKey] (and Observe's channel close at once); a nil Client makes
// them fail with [ErrNilClient].
func (c *Client) Election(name string) *Election {
	e := &Election{client: c, name: name}
	e.termKey, e.channel, _ = election.Names(name)
	switch msg := election.CheckName(name); {
	case c == nil || c.client == nil:
		e.err = ErrNilClient
	case msg != "":
		e.err = fmt.Errorf("%w: %s", ErrInvalidKey, msg)
	default:
		e.sharded = c.cluster
	}
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

// Campaign blocks until the caller is elected leader with value, or ctx
// ends; cancelling ctx ends it as it ends a wait of [WaitForRelease].
// Campaigners wait in line: when the leader resigns the longest-waiting
// one is elected at once; when a leader dies, one is elected as its key
// expires, at most ttl after its last refresh. The leadership is kept
// alive in the background with ttl as each lease (see [Leadership]).
//
// Errors, with nothing left behind (no key, no place in the line):
//   - before anything is sent: [ErrInvalidTTL] (below 4 ms, too short
//     for a keep-alive), [ErrInvalidKey], [ErrNilClient], [ErrNilContext].
//   - an error matching both [ErrNotObtained] and ctx.Err(): ctx ended
//     first. Transient Redis errors are retried until then.
//   - a Redis error that is not transient (NOPERM, a closed client).
//
// A failed Campaign deletes the key if its last attempt took it unseen (a
// lost reply), spending at most 250 ms on it after ctx ended; failing that,
// the key expires after ttl.
func (e *Election) Campaign(ctx context.Context, value string, ttl time.Duration) (*Leadership, error) {
	return e.campaign(ctx, value, ttl, func(h *handle) (*KeepAlive, error) { return h.keepAlive(ttl, nil) })
}

// campaign is Campaign, the leadership kept alive by keep.
func (e *Election) campaign(ctx context.Context, value string, ttl time.Duration, keep func(*handle) (*KeepAlive, error)) (*Leadership, error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	ttl = time.Duration(ms) * time.Millisecond
	if err := (*KeepAliveOptions)(nil).config(ttl).Check(); err != nil {
		return nil, fmt.Errorf("%w: %v is too short for the leadership's keep-alive (%w)", ErrInvalidTTL, ttl, err)
	}
	token := newToken()
	opt := &Options{RetryStrategy: WaitForRelease(nil), FenceKey: e.termKey, Metadata: "0:" + value, Token: token}
	for {
		// Hooks see one obtain call, whatever the rounds; a leadership lost
		// before its keep-alive starts ends it, and a new call goes on.
		got, err := e.client.observed(ctx, KindElection, e.name, ttl, func(ctx context.Context, obs *observation) (Handle, error) {
			return e.round(ctx, obs, opt, value, ttl)
		})
		if err != nil {
			return nil, err
		}
		lead := got.(*Leadership)
		ka, err := keep((*handle)(lead.lock))
		if err == nil {
			lead.keepAlive = ka
			return lead, nil
		}
		_ = lead.lock.Release(ctx) // best effort: the key expires otherwise
		if !errors.Is(err, ErrLockNotHeld) && !errors.Is(err, ErrLockLost) {
			return nil, err
		}
	}
}

// round is one round of a Campaign: the obtain of the election key, then
// the announcement of the value. It returns the Leadership, an error that
// ends the Campaign, or neither for another round (not elected yet, a
// transient error, the key lost before it was announced).
func (e *Election) round(ctx context.Context, obs *observation, opt *Options, value string, ttl time.Duration) (Handle, error) {
	var lock *Lock
	again, err := election.Attempt(ctx, ErrNotObtained, func(wctx context.Context) (err error) {
		lock, err = e.client.obtain(wctx, []string{e.name}, ttl, opt, true, obs)
		return err
	}, func() { e.abandon(ctx, opt.Token) })
	if again || err != nil {
		return nil, err
	}
	held, err := election.Proclaim(ctx, electionProclaimScript, e.client.client, e.name, e.channel,
		lock.held().tokenArg(), value, e.sharded)
	switch {
	case err == nil && !held:
		lock.lease.Lost(time.Now())
		return nil, nil
	case err != nil && ctx.Err() != nil:
		(*handle)(lock).discard(ctx) // best effort: the caller gave up; the key expires otherwise
		return nil, &election.CtxError{Base: ErrNotObtained, Ctx: ctx.Err()}
	}
	// A failed announcement (Redis error) costs observers up to
	// election.Resync; the leadership itself is sound.
	return &Leadership{election: e, lock: lock, value: value}, nil
}

// abandon deletes the election key if token holds it, in case the last
// attempt of a failed Campaign took it while its reply was lost. Best
// effort, bounded by election.Abandon even when ctx has ended.
func (e *Election) abandon(ctx context.Context, token string) {
	l, err := e.client.Attach([]string{e.name}, token, 0)
	if err != nil {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), election.Abandon)
	defer cancel()
	(*handle)(l).discard(actx) // usually nothing: nothing was taken
}

// LeaderInfo describes the current leader of an election.
type LeaderInfo struct {
	Value string        // the value it was elected with, or proclaimed since
	Term  int64         // its term: the fence token of its leadership
	TTL   time.Duration // time left on its key (it is refreshed while the leader lives); -1 ms if it has no expiry
}

// Leader returns the current leader of the election, blocking for one
// round trip. It returns [ErrNoLeader] when nobody leads, the Redis error
// as it is, or [ErrUnexpectedReply]. Bad input gives the errors of
// [Election.Campaign] before anything is sent.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	if err := e.check(ctx); err != nil {
		return LeaderInfo{}, err
	}
	st, err := e.read(ctx)
	if err != nil {
		return LeaderInfo{}, err
	}
	if !st.Leads {
		return LeaderInfo{}, ErrNoLeader
	}
	return LeaderInfo{Value: st.Value, Term: st.Term, TTL: st.TTL}, nil
}

func (e *Election) read(ctx context.Context) (election.State, error) {
	keys := []string{e.name, e.termKey}
	reply, err := electionLeaderScript.Run(ctx, e.client.client, keys).Slice()
	if err != nil {
		return election.State{}, typed(ctx, e.client.client, keys, "", err)
	}
	st, ok := election.ParseLeader(reply)
	if !ok {
		return st, fmt.Errorf("%w: leader of %q: %#v", ErrUnexpectedReply, e.name, reply)
	}
	return st, nil
}

// Run campaigns with value and ttl ([Election.Campaign]), runs fn under
// [Leadership.Context], then resigns ([Leadership.Resign]), even when fn
// panics. It returns the error of Campaign when not elected, else fn's
// error, else Resign's ([ErrLockNotHeld] when the leadership was lost
// before fn returned).
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
