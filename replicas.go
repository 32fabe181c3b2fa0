package redislock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redislock/redislock/internal/replica"
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
// [Options.MinReplicas] cannot be honoured (see internal/replica).
func checkReplicas(client RedisClient, opt *Options) error {
	want, timeout := opt.minReplicas(), opt.replicaTimeout()
	if want < 0 || timeout < 0 {
		return fmt.Errorf("%w: negative Options.MinReplicas (%d) or Options.ReplicaTimeout (%v)", ErrInvalidOption, want, timeout)
	}
	if want == 0 || replica.Pinnable(client) {
		return nil
	}
	return fmt.Errorf("%w: Options.MinReplicas needs a *redis.Client (single node or Sentinel failover client) or a *redis.ClusterClient, not %T", ErrUnsupportedClient, client)
}

// confirmReplicas waits, when opt.MinReplicas is set, for that many
// replicas to acknowledge the lock just obtained (docs/failover.md); when
// they do not in time, or the lock is no longer ours, it releases the lock
// and returns the error. args are the obtain script's ARGV.
func confirmReplicas(ctx context.Context, lock *Lock, opt *Options, scriptKeys []string, args ...any) error {
	want := opt.minReplicas()
	if want <= 0 {
		return nil
	}
	r := replica.Request{Client: lock.be.redis(), Key: lock.keys[0], Script: obtainScript, Keys: scriptKeys,
		Args: args, Want: want, Timeout: replica.Timeout(opt.replicaTimeout(), lock.lease.TTL())}
	got, err := replica.Confirm(ctx, r, func(reply int64) error {
		if reply == obtainHeld || reply < 0 {
			return ErrNotObtained // lost between the obtain and now
		}
		lock.fence = reply
		return nil
	})
	switch {
	case errors.Is(err, replica.ErrUnsupported):
		err = checkReplicas(lock.be.redis(), &Options{MinReplicas: want})
	case err == nil && got < want:
		err = &ReplicaError{Want: want, Got: got}
	}
	if err != nil {
		_ = lock.Release(ctx)
	}
	return err
}
