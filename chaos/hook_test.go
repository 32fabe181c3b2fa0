package chaos_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// errCounter is a go-redis hook that counts the commands and dials that
// failed with something other than a Redis reply: timeouts, resets,
// refused connections. It shows that a fault schedule reached the clients
// (redislock reports a wait that ran out as not obtained, whatever the
// cause).
type errCounter struct{ n atomic.Int64 }

func (c *errCounter) count(err error) {
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		c.n.Add(1)
	}
}

func (c *errCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		c.count(err)
		return conn, err
	}
}

func (c *errCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(err)
		return err
	}
}

func (c *errCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		c.count(err)
		return err
	}
}
