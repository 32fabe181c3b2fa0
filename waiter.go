package redislock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock/internal/script"
)

// The timing of event-driven waiting ([WaitForRelease]).
const (
	// firstBlock and maxBlock bound one blocking call (BLMOVE): a waiter
	// blocks for as long as it has already waited, but at least firstBlock
	// and at most maxBlock, then tries again. Redis hands a grant to the
	// client blocked longest, so a block that ends without one sends the
	// waiter behind those that blocked meanwhile: blocks that grow with the
	// wait keep that rare (once for waits up to firstBlock+maxBlock, then
	// once a second), while the context is still checked between blocks:
	// go-redis cannot interrupt a blocking command.
	firstBlock = 250 * time.Millisecond
	maxBlock   = time.Second

	// blockSlack is how late Redis may end a blocking call: it checks their
	// timeouts on its cron tick, every 100 ms at the default hz of 10. A
	// waiter that must act at a given time (the holder's expiry, the
	// context's deadline) blocks only until that time minus blockSlack.
	blockSlack = 100 * time.Millisecond

	// minBlock is the shortest block worth a round trip; with less time
	// left, a waiter sleeps on a local timer instead.
	minBlock = 10 * time.Millisecond

	// waitRegistration is how long a waiter's registration in a wait queue
	// lasts without renewal; every attempt renews it, and a waiter attempts
	// at least every half of it. A registration only tells Release to hand
	// the key over rather than delete it, so one left by a waiter that died
	// costs at most one reservation with no taker (handoverReservation).
	waitRegistration = 10 * time.Second

	// handoverReservation is how long a key handed over stays reserved for
	// the woken waiter, which takes it in the same round trip as its
	// wake-up (see blockingAttempt).
	handoverReservation = 100 * time.Millisecond
)

// WaitForRelease returns a strategy that waits for the lock to be released
// instead of sleeping a fixed backoff. A waiter blocks on Redis, and the
// holder's [Lock.Release] hands the lock over to one waiter, the one that has
// waited longest, across clients and processes; it wakes no other. Waiting
// ends at the context's deadline or, when the context has none, the TTL
// after the call began, as with every strategy, and a waiter never sleeps
// past the holder's expiry: the lock of a holder that died is taken as soon
// as its key expires.
//
// Use it for a lock that is contended and held briefly, where polling
// either leaves the lock idle until the next poll or loads Redis with polls
// from every waiter, and lets some waiters starve. It costs about four
// commands (round trips, a script counting one) per acquisition, however
// many wait: the attempt that fails, the blocking wait with the attempt
// that follows it in the same round trip, and the Release.
//
// How it works: an attempt that fails registers the waiter in a queue of the
// key, in the same script, so no release that follows can be missed. The
// Release script then reserves the key for 100 ms instead of deleting it,
// and pushes a grant onto the key's wake-up list. Redis gives the grant to
// the client blocked longest on the list (BLMOVE), and runs that waiter's
// next attempt, sent with the block, as soon as it is served: the attempt
// takes the reserved key with the grant. The order is thus the order in
// which waiters blocked; a waiter whose block ends without a grant (after
// 250 ms at first, then after as long as it has waited, at most 1 s) tries
// again and blocks anew, behind those that came meanwhile.
//
// It must be [Options.RetryStrategy] itself, not wrapped in another
// strategy (wrapped, it polls with fallback). Every party to the lock should
// use it: the holder's Release wakes the next waiter only when that holder
// obtained the lock with WaitForRelease; another release is noticed when a
// block ends.
//
// fallback is used where events cannot be: between attempts that failed on
// a transient Redis error, and in place of blocking when the client has no
// Pipeline method (a [RedisClient] that is only a redis.Scripter), when its
// ReadTimeout is under 450 ms, when the server refuses BLMOVE (Redis before
// 6.2, an ACL), or when a key cannot be given companion keys in its hash
// slot (a key without hash tag that contains "}"). Polling then sleeps
// fallback's backoff, or less when the holder expires sooner; a lock obtained
// so still hands over on Release.
// Default (nil): ExponentialBackoff(8ms, 128ms) with ±50% [Jitter].
//
// Cost, besides the commands:
//   - keys: two companions per lock key, in its hash slot, that exist only
//     while someone waits: a wait queue "<key>:redislock:waiters" (a sorted
//     set of waiter ids) and a wake-up list "<key>:redislock:wake"; for a key
//     without hash tag, "{<key>}:redislock:waiters" and so on. A waiter also
//     has a grant list, "<first key>:redislock:grant:<id>", that holds a grant
//     for the instant between its wake-up and its attempt.
//   - connections: a blocking waiter holds one pooled connection while it
//     blocks, but the goroutines that wait for one key through one go-redis
//     client share one: the one that has waited longest blocks, the others
//     sleep until it has the lock, and the next takes its place. At most half
//     the client's PoolSize connections block at once; beyond that, waiters
//     poll every 250 ms.
//   - Release, for a lock obtained with it, is still one script, one round
//     trip; when a live waiter is registered, the key stays held by the
//     reservation until the woken waiter takes it, in the same instant, or
//     for at most 100 ms if that waiter died meanwhile. A lock obtained
//     without WaitForRelease releases exactly as before.
//
// A multi-key lock ([Client.ObtainMulti]) waits in the queue of the key that
// blocks it (the one held longest), and its Release hands every key over to
// that key's own queue. A waiter woken for one key while another of its keys
// is still held passes the first on to the next waiter of its queue, and
// waits for the other.
//
// Cancelling the context ends the wait of a goroutine at once, unless it is
// the one that blocks on Redis for its client and key: go-redis cannot
// interrupt a blocking command, so that one notices when its block ends,
// within as long as it had waited (at least 250 ms, at most about 1.1 s). If
// the lock comes to it with that block, it passes the lock on. A waiter that
// gives up (context, deadline) removes its registration with one more script
// call. Errors are those of [Client.ObtainMulti].
//
// A lock obtained at the end of a block counts its lease ([Lock.KeepAlive])
// from the start of that block, since the script ran at some unknown point
// after it; a block lasts at most half the TTL.
//
// [Lock.Refresh] given this strategy retries transient errors with fallback,
// and NextBackoff returns fallback's. Like the other strategies, the value
// is safe for concurrent use and each call starts afresh.
func WaitForRelease(fallback RetryStrategy) RetryStrategy {
	if fallback == nil {
		fallback = Jitter(ExponentialBackoff(8*time.Millisecond, 128*time.Millisecond), 0.5)
	}
	return &waitForRelease{fallback: fallback}
}

type waitForRelease struct {
	fallback RetryStrategy
}

func (w *waitForRelease) NextBackoff() time.Duration { return w.fallback.NextBackoff() }

// restart returns fallback afresh: where a call retries without events
// (Refresh, a key without companions), it follows fallback.
func (w *waitForRelease) restart() RetryStrategy { return startRetry(w.fallback) }

// Names of a lock key's companions (see handover.lua).
const (
	waitQueueSuffix = ":redislock:waiters"
	wakeListSuffix  = ":redislock:wake"
)

// waitKeys returns the keys that release.lua takes to hand the lock over:
// the lock keys, their wait queues, then their wake-up lists. ok is false
// when some key cannot have companions in its own hash slot.
func waitKeys(keys []string) (_ []string, ok bool) {
	n := len(keys)
	out := make([]string, 3*n)
	copy(out, keys)
	for i, k := range keys {
		base := k
		if !hasHashTag(k) {
			if strings.IndexByte(k, '}') >= 0 {
				return nil, false
			}
			base = "{" + k + "}"
		}
		out[n+i] = base + waitQueueSuffix
		out[2*n+i] = base + wakeListSuffix
		if HashSlot(out[n+i]) != HashSlot(k) {
			return nil, false
		}
	}
	return out, true
}

// hasHashTag reports whether Redis Cluster would hash key by a tag: a
// non-empty text between its first "{" and the next "}".
func hasHashTag(key string) bool {
	i := strings.IndexByte(key, '{')
	return i >= 0 && strings.IndexByte(key[i+1:], '}') > 0
}

// blocker is the part of a go-redis client that waiting needs beyond
// scripts: pipelines, to send a blocking BLMOVE and the attempt that
// follows it in one round trip. Every go-redis client has them.
type blocker interface {
	Pipeline() redis.Pipeliner
}

// blockerOf returns client as a blocker and the longest it may block, or
// nil when it cannot block: no pipelines, or a ReadTimeout too short for a
// blocking call (go-redis would give up on the reply and close the
// connection).
func blockerOf(client RedisClient) (blocker, time.Duration) {
	b, ok := client.(blocker)
	if !ok {
		return nil, 0
	}
	longest := maxBlock
	if rt, _ := clientLimits(client); rt > 0 {
		longest = min(longest, rt-blockSlack-100*time.Millisecond)
	}
	if longest < firstBlock {
		return nil, 0
	}
	return b, longest
}

// clientLimits returns the ReadTimeout and PoolSize (per node) of a
// go-redis client, zero when unknown.
func clientLimits(client RedisClient) (readTimeout time.Duration, poolSize int) {
	switch c := client.(type) {
	case interface{ Options() *redis.Options }:
		o := c.Options()
		return o.ReadTimeout, o.PoolSize
	case interface{ Options() *redis.ClusterOptions }:
		o := c.Options()
		return o.ReadTimeout, o.PoolSize
	case interface{ Options() *redis.RingOptions }:
		o := c.Options()
		return o.ReadTimeout, o.PoolSize
	}
	return 0, 0
}

// waitAttempt is what a failed attempt of a waiter learned.
type waitAttempt struct {
	expiry   time.Time // when the blocking key can expire; zero when it has no expiry
	blocker  int       // index of the key that blocks longest
	reserved bool      // that key is reserved for another waiter's grant
}

// obtainCall is one ObtainMulti call: the Lock it fills in (keys, token
// and TTL set) and the arguments of its attempts.
type obtainCall struct {
	client     RedisClient
	lock       *Lock
	scriptKeys []string // the lock keys, then the fence key if any
	fenced     any
	metadata   string
	ms         int64
	ttl        time.Duration
}

// wait is ObtainMulti's loop for [WaitForRelease]. plain is the ordinary
// attempt, for keys that cannot have companions. On success the Lock is
// complete.
//
// A failed attempt registers the waiter in the wait queue of the key that
// blocks it, in the same script, so that a Release that follows hands the
// key over and pushes a grant onto the key's wake-up list, whether the
// waiter blocks on the list yet or not: no wake-up is lost. The waiter that
// leads its group (waitgroup.go) then sends, in one round trip, BLMOVE from
// the wake-up list to its own grant list and the next attempt, which Redis
// runs as soon as the BLMOVE is served: with the grant, on a release; as a
// plain retry, when the block times out. The other members sleep until they
// lead, or until they must try again: when the holder can have expired, to
// renew their registration, or at the deadline.
func (o *obtainCall) wait(ctx context.Context, w *waitForRelease, plain attemptFunc) error {
	release, ok := waitKeys(o.lock.keys)
	if !ok {
		return retry(ctx, o.ttl, w, plain)
	}
	b, longest := blockerOf(o.client)
	if b == nil {
		// Poll, but release as a waiter does: the waiters that can block
		// are woken by our Release.
		return o.poll(ctx, w, release)
	}
	ctx, cancel := boundWait(ctx, time.Now().Add(o.ttl))
	defer cancel()

	n := len(o.lock.keys)
	wt := newWaiter()
	// A lock obtained at the end of a block counts its lease from the
	// block's start (the script ran at some point after it, and no local
	// clock says when): blocking at most half the TTL keeps at least half
	// the lease for Lock.KeepAlive.
	wt.longest = min(longest, max(o.ttl/2, minBlock))
	grants := strings.TrimSuffix(release[n], waitQueueSuffix) + grantListInfix + wt.id
	keys := make([]string, 0, len(o.scriptKeys)+2*n+1)
	keys = append(append(append(keys, o.scriptKeys...), release[n:]...), grants)
	leaveKeys := append(release[:3*n:3*n], grants)
	args := []any{o.lock.tokenArg, o.metadata, o.ms, o.fenced, wt.id, argRegistration, argReservation}
	var (
		fallback   RetryStrategy
		registered bool // in a wait queue: the last attempt failed
		group      *waitGroup
		block      time.Duration // how long the next attempt blocks first
	)
	// giveUp leaves the group and the wait queue, and passes on a grant
	// that a blocking attempt may have left in the grant list.
	giveUp := func() {
		if group != nil {
			group.leave(wt)
			group = nil
		}
		if registered {
			lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer lcancel()
			_ = leaveScript.Run(lctx, o.client, leaveKeys, wt.id, argReservation).Err()
		}
	}
	// pause sleeps the fallback's next backoff after a transient error; it
	// reports false when the fallback gives up or the context ends.
	pause := func() bool {
		if fallback == nil {
			fallback = startRetry(w.fallback)
		}
		backoff := fallback.NextBackoff()
		return backoff > 0 && wt.sleep(ctx, backoff, false)
	}
	defer func() {
		if wt.timer != nil {
			wt.timer.Stop()
		}
	}()
	// Join the group of the first key before the first attempt, so that
	// the goroutines of this process wait in the order they called.
	group = joinWaitGroup(o.client, release[2*n], wt)

	for {
		sent := time.Now()
		o.lock.lease.Obtained(sent, o.ttl)
		var (
			reply     any
			err       error
			moveErr   error
			wasLeader = block > 0
		)
		if wasLeader {
			reply, moveErr, err = o.blockingAttempt(ctx, b, group.list, grants, keys, args, block)
			group.unblock()
			block = 0
			// The attempt ran when the block ended, not when it was sent:
			// read the holder's expiry from now (late by half a round trip
			// at most).
			sent = time.Now()
		} else {
			reply, err = obtainScript.Run(ctx, o.client, keys, args...).Result()
		}
		if err == nil {
			if fence, ok := reply.(int64); ok {
				registered = false
				giveUp()
				o.lock.fence = fence
				o.lock.handover = &handover{keys: release}
				if wasLeader && ctx.Err() != nil {
					// Obtained at the end of a block that outlasted the
					// context: the caller has gone, so the lock goes on.
					lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
					defer lcancel()
					_, _ = o.lock.runRelease(lctx)
					return notObtained(ctx)
				}
				return nil
			}
			if !registered {
				wt.since = sent
			}
			registered = true
		}
		// The attempt ran or failed; the block may have failed on its own.
		if err == nil && moveErr != nil && !script.Transient(moveErr) {
			// BLMOVE refused (an old server, an ACL, a proxy): poll.
			giveUp()
			return o.poll(ctx, w, release)
		}
		if ctx.Err() != nil {
			registered = registered || err != nil
			giveUp()
			return notObtained(ctx)
		}
		if err == nil && moveErr != nil {
			err = moveErr
		}
		if err != nil {
			// The script may have run: registered stays as it was, and a
			// grant already moved to the grant list waits for the next.
			if !script.Transient(err) || !pause() {
				registered = true // to be sure: leave.lua is harmless
				giveUp()
				if ctx.Err() != nil {
					return notObtained(ctx)
				}
				return err
			}
			continue
		}
		at, err := parseWaitReply(reply, sent)
		if err != nil {
			giveUp()
			return err
		}
		// Try again when the holder can have expired, or to renew the
		// registration, or at the deadline, whichever comes first.
		until := time.Now().Add(waitRegistration / 2)
		if !at.reserved && !at.expiry.IsZero() && at.expiry.Before(until) {
			until = at.expiry
		}
		if d, ok := ctx.Deadline(); ok && d.Before(until) {
			until = d
		}
		list := release[2*n+at.blocker]
		if group == nil || group.list != list {
			if group != nil {
				group.leave(wt)
			}
			group = joinWaitGroup(o.client, list, wt)
		}
		if block, err = group.wait(ctx, wt, until); err != nil {
			giveUp()
			return notObtained(ctx)
		}
	}
}

// grantListInfix names a waiter's grant list: "<base>:redislock:grant:<id>",
// where base is the first lock key, or that key in braces (see waitKeys).
const grantListInfix = ":redislock:grant:"

// blockingAttempt sends BLMOVE from list to grants, blocking for at most
// d (plus Redis's cron tick), and the attempt, which Redis runs right after
// the BLMOVE is served: in one round trip. It returns the attempt's reply,
// BLMOVE's error (nil when it moved a grant or timed out) and the attempt's
// error.
func (o *obtainCall) blockingAttempt(ctx context.Context, b blocker, list, grants string, keys []string, args []any, d time.Duration) (reply any, moveErr, err error) {
	pipe := b.Pipeline()
	move := pipe.Do(ctx, "blmove", list, grants, "left", "left", strconv.FormatFloat(d.Seconds(), 'f', 3, 64))
	eval := obtainScript.Queue(ctx, pipe, keys, args...)
	_, _ = pipe.Exec(ctx)
	moveErr = move.Err()
	if errors.Is(moveErr, redis.Nil) {
		moveErr = nil
	}
	// After NOSCRIPT (a restarted server, a new master), EVAL loads the
	// script and takes the grant the BLMOVE moved, if any.
	reply, err = obtainScript.Settle(ctx, o.client, eval, keys, args...).Result()
	return reply, moveErr, err
}

// parseWaitReply reads obtain.lua's failure reply to a waiter.
func parseWaitReply(reply any, sent time.Time) (waitAttempt, error) {
	r, ok := reply.([]any)
	if !ok || len(r) != 3 {
		return waitAttempt{}, errors.New("redislock: unexpected reply from the obtain script")
	}
	code, _ := r[0].(int64)
	index, _ := r[1].(int64)
	reserved, _ := r[2].(int64)
	at := waitAttempt{blocker: int(index) - 1, reserved: reserved == 1}
	if code < -1 {
		// The key expires ms after the script read its PTTL, which is after
		// sent: waking at sent+ms+1ms is never later than its expiry+1ms.
		at.expiry = sent.Add(time.Duration(-code) * time.Millisecond)
	}
	return at, nil
}

// poll obtains the lock with attempts spaced by w's fallback, never
// sleeping past the holder's expiry. The Lock then hands its keys over on
// Release (release is waitKeys' answer).
func (o *obtainCall) poll(ctx context.Context, w *waitForRelease, release []string) error {
	var (
		start    = time.Now()
		fallback = startRetry(w.fallback)
		cancel   context.CancelFunc
		wt       = newWaiter()
	)
	defer func() {
		if cancel != nil {
			cancel()
		}
	}()
	for {
		sent := time.Now()
		o.lock.lease.Obtained(sent, o.ttl)
		reply, err := obtainScript.Run(ctx, o.client, o.scriptKeys, o.lock.tokenArg, o.metadata, o.ms, o.fenced).Int64()
		if err == nil && reply >= 0 {
			o.lock.fence = reply
			o.lock.handover = &handover{keys: release}
			return nil
		}
		if ctx.Err() != nil {
			return notObtained(ctx)
		}
		if err != nil && !script.Transient(err) {
			return err
		}
		backoff := fallback.NextBackoff()
		if backoff <= 0 {
			if err != nil {
				return err
			}
			return ErrNotObtained
		}
		if err == nil && reply < -1 {
			if left := time.Until(sent.Add(time.Duration(-reply) * time.Millisecond)); left < backoff {
				backoff = max(left, time.Millisecond)
			}
		}
		if cancel == nil {
			ctx, cancel = boundWait(ctx, start.Add(o.ttl))
		}
		if !wt.sleep(ctx, backoff, false) {
			return notObtained(ctx)
		}
	}
}

// handover is what the Release of a lock obtained with [WaitForRelease]
// needs to hand its keys over: the keys release.lua takes (the lock keys,
// their wait queues, their wake-up lists). A Lock refers to it by pointer,
// so that locks obtained otherwise do not grow.
type handover struct {
	keys []string
}

// runRelease runs release.lua for l: a plain release, or, for a lock
// obtained with [WaitForRelease], one that hands each key over to its next
// waiter.
func (l *Lock) runRelease(ctx context.Context) (int64, error) {
	if l.handover == nil {
		return releaseScript.Run(ctx, l.client, l.keys, l.tokenArg).Int64()
	}
	return releaseScript.Run(ctx, l.client, l.handover.keys, l.tokenArg, argReservation).Int64()
}
