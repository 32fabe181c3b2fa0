package redislock

import (
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/check"
)

// Options tunes one [Client.Obtain], [Client.ObtainMulti] or [Lock.Refresh]
// call; nil means all defaults. The library never modifies an Options value
// nor keeps per-call state in it, so one may be shared by concurrent calls.
type Options struct {
	// RetryStrategy decides whether and when a held lock (or, for Refresh, a
	// transient Redis error) is tried again; see [RetryStrategy].
	// Default: [NoRetry].
	RetryStrategy RetryStrategy

	// Metadata is stored with the lock, after the token, for whoever
	// inspects the key (for example "host:pid"). Refresh ignores it.
	// Default: empty.
	Metadata string

	// Token identifies the holder. Obtaining with the token of the current
	// holder succeeds (re-entrant obtain) and resets the TTL and metadata;
	// ownership is compared by the exact token. Refresh ignores it.
	// Default: 16 random bytes from crypto/rand, base64url without padding
	// (22 characters).
	Token string

	// FenceKey names a counter key that makes every new acquisition return
	// a strictly greater fencing token ([Lock.FenceToken]). On Redis Cluster
	// it must share the lock keys' hash slot ("{job}:fence" with
	// "{job}:lock"). It must not be one of the lock keys. Refresh ignores it.
	// Default: empty, no fencing (FenceToken returns 0).
	FenceKey string

	// MinReplicas, when above zero, makes Obtain and ObtainMulti confirm
	// the lock, with the same token and fence token, on at least this many
	// replicas before returning it (docs/failover.md). When fewer
	// acknowledge within ReplicaTimeout, the lock is released and the call
	// fails with a [*ReplicaError] ([ErrNotReplicated]). It needs a
	// *redis.Client (single node or Sentinel failover client) or a
	// *redis.ClusterClient, else the call fails with [ErrUnsupportedClient];
	// a negative value fails with [ErrInvalidOption]. Refresh ignores it.
	// Default: 0, no confirmation: replication is asynchronous.
	MinReplicas int

	// ReplicaTimeout bounds the wait for MinReplicas replicas, whatever the
	// client's ReadTimeout; a negative value fails with [ErrInvalidOption].
	// Default: a tenth of the TTL, at least 1 ms.
	ReplicaTimeout time.Duration

	// MinHold keeps a lock or permit held for at least this long after the
	// obtain returned: a [Lock.Release] (or [Permit.Release]) before then
	// leaves its keys to expire by themselves at that time, held for
	// waiters, instead of deleting or handing them over. The Lock (or
	// Permit) is released all the same: a Refresh then returns
	// [ErrNotObtained] and another Release [ErrLockNotHeld], sending nothing.
	// Fence tokens are unchanged (docs/scheduling.md). A negative value, or
	// any on an RWMutex's holds, fails with [ErrInvalidOption].
	// Default: 0, a release deletes at once.
	MinHold time.Duration
}

func (o *Options) retryStrategy() RetryStrategy {
	if o == nil || o.RetryStrategy == nil {
		return NoRetry()
	}
	return o.RetryStrategy
}

// or returns *o, or the zero Options (all defaults) when o is nil.
func (o *Options) or() Options {
	if o == nil {
		return Options{}
	}
	return *o
}

func (o *Options) metadata() string              { return o.or().Metadata }
func (o *Options) token() string                 { return o.or().Token }
func (o *Options) fenceKey() string              { return o.or().FenceKey }
func (o *Options) minReplicas() int              { return o.or().MinReplicas }
func (o *Options) replicaTimeout() time.Duration { return o.or().ReplicaTimeout }
func (o *Options) minHold() time.Duration        { return o.or().MinHold }

// checkMinHold rejects a negative MinHold, and any MinHold where supported
// is false.
func checkMinHold(opt *Options, supported bool, by string) error {
	if msg := check.MinHold(opt.minHold(), supported, by); msg != "" {
		return fmt.Errorf("%w: %s", ErrInvalidOption, msg)
	}
	return nil
}
