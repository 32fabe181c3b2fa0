package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/session"
)

// Session keeps many leases alive from its own goroutines, each refreshed
// to the session's TTL as [Lock.KeepAlive] would (docs/sessions.md says
// how). Each has its own [KeepAlive]; its Release takes it out at once. A
// lease whose validity runs out without a successful refresh ends the
// session: Done is closed and every lease in it ends at once, matching
// [ErrLockLost], before the earliest of their keys can expire. Its methods
// are safe for concurrent use.
type Session struct {
	c *Client
	e *session.Session
}

// SessionOptions tunes [Client.Session]. A nil *SessionOptions means all
// defaults, and so does a zero field. Each applies to every lease.
type SessionOptions struct {
	// Interval is as [KeepAliveOptions.Interval]; a refresh may also go up
	// to a tenth of it sooner, to join a batch. Default: ttl/3.
	Interval time.Duration
	// Margin is as [KeepAliveOptions.Margin]. Default: ttl/50 + 2ms.
	Margin time.Duration
	// MaxHold is as [KeepAliveOptions.MaxHold], counted from the lease's
	// Add. Default: 0, no limit.
	MaxHold time.Duration
}

// Session starts a session whose refreshes set ttl. It sends nothing.
// Errors: [ErrInvalidTTL]; [ErrInvalidOption], as for [Lock.KeepAlive];
// [ErrNilClient].
func (c *Client) Session(ttl time.Duration, opt *SessionOptions) (*Session, error) {
	if c == nil || checkCall(context.Background(), c.client) != nil {
		return nil, ErrNilClient
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	cfg := (*KeepAliveOptions)(opt).config(time.Duration(ms) * time.Millisecond)
	e, err := session.New(c.client, session.Config{Lease: cfg, One: refreshScript, Many: refreshMany})
	if err != nil {
		return nil, keepErr(err)
	}
	return &Session{c: c, e: e}, nil
}

// Obtain is [Session.ObtainMulti] of one key.
func (s *Session) Obtain(ctx context.Context, key string, opt *Options) (*Lock, *KeepAlive, error) {
	return s.ObtainMulti(ctx, []string{key}, opt)
}

// ObtainMulti is [Client.ObtainMulti] for the session's TTL, the lock then
// kept alive by the session, or released again when [Session.Add] fails
// (its error is returned then).
func (s *Session) ObtainMulti(ctx context.Context, keys []string, opt *Options) (*Lock, *KeepAlive, error) {
	l, err := s.c.ObtainMulti(ctx, keys, s.e.TTL(), opt)
	if err == nil {
		var k *KeepAlive
		if k, err = s.Add(l); err == nil {
			return l, k, nil
		}
		_ = l.Release(ctx)
	}
	return nil, nil, err
}

// Campaign is [Election.Campaign] for the session's TTL, the leadership
// kept alive by the session instead of a keep-alive of its own.
func (s *Session) Campaign(ctx context.Context, e *Election, value string) (*Leadership, error) {
	return e.campaign(ctx, value, s.e.TTL(), func(h *handle) (*KeepAlive, error) { return s.Add((*Lock)(h)) })
}

// Add puts x, a *[Lock], *[Permit], *[ReadLock] or *[WriteLock] of the
// session's Client (take a permit or a hold for the session's TTL, then
// Add it), under the session, which keeps it alive as [Lock.KeepAlive]
// would with the session's TTL and options. It sends nothing. Errors,
// nothing kept: those of [Lock.KeepAlive]; [ErrLockNotHeld] also for a
// *[Leadership] (use [Session.Campaign]); [ErrUnsupportedClient] for a
// lease of another Client or a [Quorum]; Err once the session ended.
func (s *Session) Add(x Handle) (*KeepAlive, error) {
	var h *handle
	if l, ok := x.(interface{ held() *handle }); ok {
		h = l.held()
	}
	switch {
	case h == nil:
		return nil, ErrLockNotHeld
	case h.be != backend(&s.c.one):
		return nil, fmt.Errorf("%w: a session keeps the leases of its own Client", ErrUnsupportedClient)
	}
	k, err := s.e.Add(&h.lease, h, h.keys[0])
	if err != nil {
		return nil, keepErr(err)
	}
	return &KeepAlive{k: k}, nil
}

// Done returns a channel that is closed when the session has ended; Err
// then returns, for good, [ErrKeepAliveStopped] after Close or Release, or
// an error matching [ErrLockLost].
func (s *Session) Done() <-chan struct{} { return s.e.Done() }

// Err returns nil until Done is closed, then why (see [Session.Done]).
func (s *Session) Err() error { return s.e.Err() }

// Close stops the session: each lease in it ends as by [KeepAlive.Stop],
// then Done is closed. It waits for the session's goroutines, which a
// server that does not answer can hold up to the client's timeouts.
func (s *Session) Close() { s.e.Close() }

// Release closes the session, then releases, each as its Release would,
// the leases it kept that were neither released nor found lost, and
// returns the first error (wrapped, with how many failed), or
// [ErrNilContext]. With ctx ended it runs as [Lock.Release] does.
func (s *Session) Release(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	return s.e.Release(ctx, releaseTimeout)
}

// RefreshCall, Ended and ReleaseCall make a handle a session's Member.
func (h *handle) RefreshCall(ctx context.Context, ms int64) (session.Call, func(error)) {
	_, done := h.obs.refreshing(ctx, time.Duration(ms)*time.Millisecond)
	return sessionCall(h.kind.refreshCall(h, ms)), done
}

func (h *handle) Ended() func(lease.End, error) { return h.obs.ended() }

func (h *handle) ReleaseCall(ctx context.Context) (session.Call, bool, func(session.Reply) error) {
	h.lease.Released()
	ctx, start := h.obs.releaseStart(ctx)
	c, ok := h.releasing()
	sent := time.Now()
	return sessionCall(c), ok, func(r session.Reply) (err error) {
		held, handed := false, 0
		if ok {
			held, handed, err = h.releaseReply(ctx, c, sent, r.N, r.Err)
		}
		if err == nil && !held {
			err = ErrLockNotHeld
		}
		h.obs.released(ctx, start, handed, err)
		return err
	}
}

func sessionCall(c call) session.Call {
	return session.Call{Script: c.script, Keys: c.keys, Args: c.args}
}
