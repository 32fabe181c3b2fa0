package handoff

import (
	"context"
	"errors"
	"fmt"
	"math"
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
}

// pipeliner is the part of a go-redis client that blocking needs beyond
// scripts: pipelines, to send a blocking BLPOP (with a first attempt before
// it, for a requeue) in one round trip. Every go-redis client has them.
type pipeliner interface {
	Pipeline() redis.Pipeliner
}

// conn is how a wait talks to Redis: [redisConn] on a server, a model of
// one in the package's timing tests.
type conn interface {
	// attempt runs the waiting script.
	attempt(ctx context.Context, keys []string, args []any) (any, error)
	// block blocks on the grant lists lists (BLPOP) for d and returns the
	// list it popped a grant from, "" when the block timed out; err is the
	// blocking call's own error. With first not nil (see
	// [Request.Requeue]), the waiter's first attempt, with keys and args
	// first, goes before the block in the same pipeline; its reply is not
	// read (the attempt after the block says what came of the wait).
	block(ctx context.Context, keys []string, first []any, lists []any, d time.Duration) (popped string, err error)
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

func (c *redisConn) block(ctx context.Context, keys []string, first []any, lists []any, d time.Duration) (string, error) {
	p := c.pipe.Pipeline()
	if first != nil {
		// It registers the waiter (lua/obtain.lua). Where the script did
		// not run (NOSCRIPT), the attempt after the block registers it.
		c.obtain.Queue(ctx, p, keys, first...)
	}
	args := make([]any, 0, len(lists)+2)
	args = append(append(append(args, "blpop"), lists...), math.Round(d.Seconds()*1000)/1000)
	pop := redis.NewStringSliceCmd(ctx, args...)
	_ = p.Process(ctx, pop) // queued: the pipeline's Exec sends it
	_, _ = p.Exec(ctx)
	got, err := pop.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", nil
	case err != nil:
		return "", err
	case len(got) != 2:
		return "", fmt.Errorf("%w: BLPOP replied %q", ErrUnexpectedReply, got)
	}
	return got[0], nil
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
	reserved bool      // that key is reserved for another waiter
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
