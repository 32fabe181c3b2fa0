package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// Shared runs ("run --shared", flock's -s) hold read holds of the RWMutex
// named KEY; exclusive runs keep the plain lock KEY, as before, so that
// status, release and programs that lock KEY with the library see them.
// Neither holds the other's keys for the whole run. Each writes its own
// key first and then looks at the other's, so that of two runs that start
// together at least one sees the other and backs off (Redis executes each
// command and script alone, in one order):
//   - a shared run takes its read hold, then looks at KEY: held (by an
//     exclusive run), it gives the hold back;
//   - an exclusive run takes KEY, then the RWMutex's write lock, which it
//     gets only when no read hold is live, and gives it back at once:
//     refused, it gives KEY back.
// See docs/cli.md, "Shared runs".

// errExclusiveHeld: a shared run found KEY held by an exclusive run.
var errExclusiveHeld = fmt.Errorf("%w: held by an exclusive run", redislock.ErrNotObtained)

// readHold is the read hold of a shared run, with the run's KEY.
type readHold struct {
	*redislock.ReadLock
	key string
}

func (h readHold) Key() string { return h.key }

// takeShared takes a read hold of KEY for a shared run, as opt says (with
// WaitForRelease it waits for a writer's release), and keeps it only if
// KEY is not held: [errExclusiveHeld] otherwise.
func (r *runner) takeShared(ctx context.Context, locker *redislock.Client, opt *redislock.Options) (held, error) {
	rl, err := locker.RWMutex(r.key).RLock(ctx, r.ttl, opt)
	if err != nil {
		return nil, err
	}
	info, err := locker.Inspect(ctx, r.key)
	if err == nil && !info.Held {
		return readHold{ReadLock: rl, key: r.key}, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	_ = rl.Release(rctx) // not released, it expires at its TTL: all that can be done
	if err != nil {
		return nil, err
	}
	return nil, errExclusiveHeld
}

// excludeShared checks, for an exclusive run that has just obtained lock
// (KEY), that no shared run holds KEY: it takes the write lock of the
// RWMutex KEY as opt says (with WaitForRelease it waits for the last read
// hold to end, keeping lock alive meanwhile, and new shared runs wait
// behind it) and gives it back at once. It returns an error matching
// [redislock.ErrNotObtained] when read holds remain, one matching
// [redislock.ErrLockLost] when lock was lost while it waited.
func (r *runner) excludeShared(ctx context.Context, locker *redislock.Client, lock *redislock.Lock, opt *redislock.Options) error {
	var ka *redislock.KeepAlive // nil: stopped, without an error of its own
	if opt.RetryStrategy != nil {
		// The wait may outlast lock's TTL; "run" starts a keep-alive of
		// its own once the command may start.
		var err error
		if ka, err = lock.KeepAlive(r.ttl, nil); err != nil {
			return err
		}
	}
	rw := locker.RWMutex(r.key)
	w, err := rw.Lock(ctx, r.ttl, opt)
	ka.Stop()
	switch {
	case errors.Is(err, redislock.ErrNotObtained):
		return err
	case err != nil:
		// An ACL may allow KEY but not these: say which keys it is about.
		return fmt.Errorf("look for shared runs (the write lock of the RWMutex %q, key %q): %w", r.key, rw.WriterKey(), err)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
	defer cancel()
	_ = w.Release(rctx) // not released, it expires at its TTL, keeping shared runs out until then
	if err := ka.Err(); errors.Is(err, redislock.ErrLockLost) {
		return err // KEY was lost while shared runs ended: start again
	}
	return nil
}

// sharedHold is one live read hold of a shared run.
type sharedHold struct {
	Token, Metadata string
	FenceToken      int64
	TTL             time.Duration
}

// sharedHolds reads the live read holds of the RWMutex named key, the
// first to expire first. It reads the keys of the RWMutex as
// docs/rwmutex.md describes them (the library has no call that lists read
// holds): the readers sorted set, token → expiry in server milliseconds,
// and the holds hash, token → "<fence>:<metadata>", on the server that
// holds them, with its clock (TIME).
func sharedHolds(ctx context.Context, rdb redis.UniversalClient, key string) ([]sharedHold, error) {
	readers, holds, err := rwKeys(key)
	if err != nil {
		return nil, err
	}
	node, err := nodeFor(ctx, rdb, readers)
	if err != nil {
		return nil, err
	}
	now, err := node.Time(ctx).Result()
	if err != nil {
		return nil, err
	}
	ms := now.UnixMilli()
	live, err := node.ZRangeByScoreWithScores(ctx, readers, &redis.ZRangeBy{Min: "(" + strconv.FormatInt(ms, 10), Max: "+inf"}).Result()
	if err != nil || len(live) == 0 {
		return nil, err
	}
	tokens := make([]string, len(live))
	for i, z := range live {
		tokens[i], _ = z.Member.(string)
	}
	values, err := node.HMGet(ctx, holds, tokens...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]sharedHold, len(live))
	for i, z := range live {
		h := sharedHold{Token: tokens[i], TTL: time.Duration(int64(z.Score)-ms) * time.Millisecond}
		if v, ok := values[i].(string); ok {
			f, meta, _ := strings.Cut(v, ":")
			h.Metadata = meta
			h.FenceToken, _ = strconv.ParseInt(f, 10, 64) // 0 when it is not a number: no fence token
		}
		out[i] = h
	}
	return out, nil
}

// rwKeys returns the readers and holds keys of the RWMutex named name,
// from its writer key: the same name with another role ("writer" →
// "readers", "holds"), as docs/rwmutex.md lays them out.
func rwKeys(name string) (readers, holds string, err error) {
	var none *redislock.Client // names the keys, sends nothing
	w := none.RWMutex(name).WriterKey()
	for _, suffix := range []string{":writer", ":writer:untagged"} {
		if prefix, ok := strings.CutSuffix(w, suffix); ok {
			rest := strings.TrimPrefix(suffix, ":writer")
			return prefix + ":readers" + rest, prefix + ":holds" + rest, nil
		}
	}
	return "", "", errors.New("the keys of shared runs are laid out in a way this redislock does not know (writer key " + strconv.Quote(w) + ")")
}

// isNoPerm reports whether err is Redis refusing a command or key to the
// user (an ACL).
func isNoPerm(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "NOPERM")
}

// describeShared describes the shared holds of key for the message of an
// exclusive run refused: ` by 2 shared runs: "a:1", "b:2" (the first
// expires in 9.8s)`, or "" when there are none or they cannot be read.
func describeShared(ctx context.Context, rdb redis.UniversalClient, key string) string {
	holds, err := sharedHolds(ctx, rdb, key)
	if err != nil || len(holds) == 0 {
		return ""
	}
	names := make([]string, len(holds))
	for i, h := range holds {
		names[i] = strconv.Quote(h.Metadata)
	}
	runs := "shared runs"
	if len(holds) == 1 {
		runs = "shared run"
	}
	return fmt.Sprintf(" by %d %s: %s (the first expires in %v)", len(holds), runs, strings.Join(names, ", "), holds[0].TTL.Round(time.Millisecond))
}
