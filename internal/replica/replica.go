// Package replica confirms that a lock just obtained reached the master's
// replicas: on one connection to the master of the lock's keys it runs the
// obtain script again (re-entrant), then WAIT, which counts the replicas
// that have that connection's latest write (docs/failover.md).
package replica

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock/internal/script"
)

// ErrUnsupported is returned by [Confirm] for a client that cannot pin a
// connection to the master: neither a *redis.Client (single node or
// Sentinel failover) nor a *redis.ClusterClient.
var ErrUnsupported = errors.New("replica: the client cannot pin a connection to the master")

// Pinnable reports whether WAIT can run on the connection of c's writes.
func Pinnable(c redis.Scripter) bool {
	switch c.(type) {
	case *redis.Client, *redis.ClusterClient:
		return true
	}
	return false
}

// Request is a confirmation: the obtain that Confirm runs again, and the
// replicas it waits for.
type Request struct {
	Client  redis.Scripter
	Key     string // a key of the lock: its master is the one asked
	Script  *script.Script
	Keys    []string
	Args    []any
	Want    int           // replicas to wait for
	Timeout time.Duration // WAIT's timeout, at least 1 ms whatever it is
}

// Confirm runs r.Script on one connection to the master of r.Key, passes
// its reply to onReply, and, when that returns nil, sends WAIT on that
// connection. It returns the number of replicas that acknowledged within
// r.Timeout, onReply's error, ErrUnsupported, or the Redis error (after
// reloading the scripts when the error says they are missing).
func Confirm(ctx context.Context, r Request, onReply func(reply int64) error) (int, error) {
	var node *redis.Client
	switch c := r.Client.(type) {
	case *redis.ClusterClient:
		var err error
		if node, err = c.MasterForKey(ctx, r.Key); err != nil {
			return 0, err
		}
	case *redis.Client:
		node = c
	default:
		return 0, ErrUnsupported
	}
	conn := node.Conn()
	defer func() { _ = conn.Close() }() // back to the pool; a broken one is dropped
	reply, err := r.Script.Run(ctx, conn, r.Keys, r.Args...).Int64()
	if err != nil {
		script.ReloadAfter(ctx, r.Client, err)
		return 0, err
	}
	if err := onReply(reply); err != nil {
		return 0, err
	}
	// WAIT is not pipelined with the script: a pipeline's replies are read
	// under the client's ReadTimeout, which a WAIT can outlast (its
	// timeout, plus up to 1/hz s before the server notices it), leaving an
	// i/o timeout and a broken connection. Sent alone, it is read under a
	// deadline that go-redis derives from the WAIT's own timeout.
	// WAIT 0 would block for ever: the timeout is at least 1 ms.
	got, err := conn.Wait(ctx, r.Want, max(r.Timeout.Truncate(time.Millisecond), time.Millisecond)).Result()
	if err != nil {
		script.ReloadAfter(ctx, r.Client, err)
		return 0, err
	}
	return int(got), nil
}

// Timeout is the WAIT timeout of a lock whose lease is ttl: timeout, or a
// tenth of ttl (at least 1 ms) when timeout is not above zero.
func Timeout(timeout, ttl time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	return max(ttl/10, time.Millisecond)
}
