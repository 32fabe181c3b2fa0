package handoff

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script as internal/script runs it: EVALSHA with EVAL on
// NOSCRIPT, alone or queued in a pipeline.
type Script interface {
	// Run runs the script through c.
	Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd
	// Queue queues the script (EVALSHA) in p.
	Queue(ctx context.Context, p redis.Pipeliner, keys []string, args ...any) *redis.Cmd
	// Settle returns queued's result after the pipeline ran, or, when it
	// failed with NOSCRIPT, the result of the script run again through c.
	Settle(ctx context.Context, c redis.Scripter, queued *redis.Cmd, keys []string, args ...any) *redis.Cmd
}

// pipeliner is the part of a go-redis client that blocking needs beyond
// scripts: pipelines, to send a blocking BLMOVE and the attempt that
// follows it in one round trip. Every go-redis client has them.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// conn is how a wait talks to Redis: [redisConn] on a server, a model of
// one in the package's timing tests.
type conn interface {
	// attempt runs the waiting script.
	attempt(ctx context.Context, keys []string, args []any) (any, error)
	// blockAndAttempt sends move, a BLMOVE from a wake-up list to the
	// waiter's grant list blocking for d (see [wait.moveArgs]), and runs
	// the waiting script right after, in one round trip. moveErr is the
	// blocking call's own error (nil when it moved a grant or timed out).
	// With first not nil (see [Request.Requeue]), the waiter's first
	// attempt, with keys firstKeys and args first, goes before the block
	// in the same pipeline; its reply is not read (the one after the block
	// says what came of the wait).
	blockAndAttempt(ctx context.Context, firstKeys []string, first, move []any, d time.Duration, keys []string, args []any) (reply any, moveErr, err error)
	// leave runs the leave script.
	leave(ctx context.Context, keys []string, args []any)
	// tick returns how late the server may end a blocking call.
	tick(ctx context.Context) time.Duration
}

// redisConn is a conn over a go-redis client.
type redisConn struct {
	reg       *Registry
	client    redis.Scripter
	pipe      pipeliner // nil: cannot block
	obtain    Script
	leaveWith Script
}

func (c *redisConn) attempt(ctx context.Context, keys []string, args []any) (any, error) {
	return c.obtain.Run(ctx, c.client, keys, args...).Result()
}

func (c *redisConn) blockAndAttempt(ctx context.Context, firstKeys []string, first, moveArgs []any, _ time.Duration, keys []string, args []any) (any, error, error) {
	p := c.pipe.Pipeline()
	if first != nil {
		// It registers the waiter and leaves the grant list's placeholder
		// (lua/obtain.lua).
		c.obtain.Queue(ctx, p, firstKeys, first...)
	}
	move := redis.NewCmd(ctx, moveArgs...)
	_ = p.Process(ctx, move) // queued: the pipeline's Exec sends it
	// The grant list exists with a TTL (the registration that preceded the
	// block left a placeholder in it, see lua/obtain.lua), which BLMOVE
	// keeps: a grant this process never takes expires with it.
	eval := c.obtain.Queue(ctx, p, keys, args...)
	if first != nil {
		// Where the scripts did not run (NOSCRIPT: the first is not sent
		// again, the attempt is, with EVAL), the grant list that BLMOVE may
		// have made still gets a TTL.
		p.PExpire(ctx, firstKeys[len(firstKeys)-1], placeholderLife)
	}
	_, _ = p.Exec(ctx)
	moveErr := move.Err()
	if errors.Is(moveErr, redis.Nil) {
		moveErr = nil
	}
	reply, err := c.obtain.Settle(ctx, c.client, eval, keys, args...).Result()
	return reply, moveErr, err
}

func (c *redisConn) leave(ctx context.Context, keys []string, args []any) {
	// Bounded, and run even when ctx has ended: a waiter that gives up
	// must still take its registration back.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaveTimeout)
	defer cancel()
	_ = c.leaveWith.Run(lctx, c.client, keys, args...).Err() // best effort: the registration lapses anyway
}

func (c *redisConn) tick(ctx context.Context) time.Duration {
	return c.reg.serverTick(ctx, c.client)
}

// ErrUnexpectedReply is returned when the waiting script replied with a
// shape it never gives.
var ErrUnexpectedReply = errors.New("handoff: unexpected reply from the waiting script")

// reply is what one attempt found.
type reply struct {
	obtained bool
	value    int64     // the script's reply when obtained
	expiry   time.Time // when not: when the blocking key can expire; zero when it has no expiry
	blocker  int       // index of the key that blocks longest (0 when not known)
	reserved bool      // that key is reserved for another waiter's grant
}

// parseReply reads the waiting script's reply (see the package doc).
// sent is a time before the script ran.
func parseReply(v any, sent time.Time) (reply, error) {
	var code int64
	var r reply
	switch v := v.(type) {
	case int64:
		if v >= 0 {
			return reply{obtained: true, value: v}, nil
		}
		code = v
	case []any:
		if len(v) != 3 {
			return reply{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, v)
		}
		c, ok1 := v[0].(int64)
		i, ok2 := v[1].(int64)
		res, ok3 := v[2].(int64)
		if !ok1 || !ok2 || !ok3 || c >= 0 || i < 1 {
			return reply{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, v)
		}
		code, r.blocker, r.reserved = c, int(i)-1, res == 1
	default:
		return reply{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, v)
	}
	if code < -1 {
		// The key expires ms after the script read its PTTL, which is after
		// sent: waking at sent+ms+1ms is never later than its expiry+1ms.
		r.expiry = sent.Add(time.Duration(-code) * time.Millisecond)
	}
	return r, nil
}
