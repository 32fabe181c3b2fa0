package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock/internal/script"
)

// ReplicaError is returned by an obtain with [Options.MinReplicas] when
// fewer replicas than asked acknowledged the lock before
// [Options.ReplicaTimeout]. The lock has been released.
// errors.Is(err, ErrNotReplicated) holds.
type ReplicaError struct {
	Want int // Options.MinReplicas
	Got  int // replicas that acknowledged in time
}

// Error says how many replicas acknowledged.
func (e *ReplicaError) Error() string {
	return fmt.Sprintf("%s: %d of %d in time", ErrNotReplicated.Error(), e.Got, e.Want)
}

// Unwrap returns [ErrNotReplicated].
func (e *ReplicaError) Unwrap() error { return ErrNotReplicated }

// checkReplicas refuses, before anything is sent, a client through which
// [Options.MinReplicas] cannot be honoured: WAIT counts the replicas that
// have the writes of its own connection, so it must run on the connection
// of the obtain, which only a *redis.Client (single node or Sentinel
// failover) or a *redis.ClusterClient can pin.
func checkReplicas(client RedisClient, opt *Options) error {
	want, timeout := opt.minReplicas(), opt.replicaTimeout()
	if want < 0 || timeout < 0 {
		return fmt.Errorf("%w: negative Options.MinReplicas (%d) or Options.ReplicaTimeout (%v)", ErrInvalidOption, want, timeout)
	}
	if want == 0 {
		return nil
	}
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient:
		return nil
	}
	return fmt.Errorf("%w: Options.MinReplicas needs a *redis.Client (single node or Sentinel failover client) or a *redis.ClusterClient, not %T", ErrUnsupportedClient, client)
}

// confirmReplicas makes sure, when opt.MinReplicas is set, that that many
// replicas have the lock just obtained. On one connection to the master of
// the lock's keys it runs the obtain script again with the lock's own
// token (a re-entrant obtain: it keeps the lock, its fence token and its
// metadata, and resets the TTL), then WAIT, which counts the replicas that
// have that connection's latest write, and so everything before it. When
// fewer acknowledge within the timeout, or the lock is no longer ours, it
// releases the lock and returns the error. args are the obtain script's
// ARGV.
func confirmReplicas(ctx context.Context, lock *Lock, opt *Options, scriptKeys []string, args ...any) error {
	want := opt.minReplicas()
	if want <= 0 {
		return nil
	}
	timeout := opt.replicaTimeout()
	if timeout <= 0 {
		timeout = max(lock.lease.TTL()/10, time.Millisecond)
	}
	err := waitReplicas(ctx, lock, want, timeout, scriptKeys, args)
	if err != nil {
		_ = lock.Release(ctx)
	}
	return err
}

func waitReplicas(ctx context.Context, lock *Lock, want int, timeout time.Duration, scriptKeys []string, args []any) error {
	var node *redis.Client
	switch c := lock.be.redis().(type) {
	case *redis.ClusterClient:
		var err error
		if node, err = c.MasterForKey(ctx, lock.keys[0]); err != nil {
			return err
		}
	case *redis.Client:
		node = c
	default:
		return checkReplicas(lock.be.redis(), &Options{MinReplicas: want})
	}
	conn := node.Conn()
	defer func() { _ = conn.Close() }() // back to the pool; a broken one is dropped
	reply, err := obtainScript.Run(ctx, conn, scriptKeys, args...).Int64()
	switch {
	case err != nil:
		script.ReloadAfter(ctx, lock.be.redis(), err)
		return err
	case reply == obtainHeld || reply < 0:
		return ErrNotObtained // lost between the obtain and now
	}
	lock.fence = reply
	// WAIT is not pipelined with the script: a pipeline's replies are read
	// under the client's ReadTimeout, which a WAIT can outlast (its
	// timeout, plus up to 1/hz s before the server notices it), leaving an
	// i/o timeout and a broken connection. Sent alone, it is read under a
	// deadline that go-redis derives from the WAIT's own timeout.
	// WAIT 0 would block for ever: the timeout is at least 1 ms.
	got, err := conn.Wait(ctx, want, max(timeout.Truncate(time.Millisecond), time.Millisecond)).Result()
	if err != nil {
		script.ReloadAfter(ctx, lock.be.redis(), err)
		return err
	}
	if got < int64(want) {
		return &ReplicaError{Want: want, Got: int(got)}
	}
	return nil
}
