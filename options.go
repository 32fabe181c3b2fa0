package redislock

import (
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/check"
)

// Options tunes one [Client.Obtain], [Client.ObtainMulti] or [Lock.Refresh]
// call. A nil *Options means all defaults. The library never modifies an
// Options value and keeps no per-call state in it, so one value may be
// shared by any number of concurrent calls.
type Options struct {
	// RetryStrategy decides whether and when a held lock (or, for Refresh, a
	// transient Redis error) is tried again. Each call starts its own copy
	// of the strategies of this package.
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
	// replicas before returning it (two more round trips and a WAIT; see
	// docs/failover.md). When fewer acknowledge within ReplicaTimeout, the
	// lock is released and the call fails with a [*ReplicaError]
	// ([ErrNotReplicated]). It needs a *redis.Client (single node or
	// Sentinel failover client) or a *redis.ClusterClient; with any other
	// client the call fails with [ErrUnsupportedClient] before sending
	// anything, and a negative value fails with [ErrInvalidOption]. Refresh
	// ignores it.
	// Default: 0, no confirmation: replication is asynchronous.
	MinReplicas int

	// ReplicaTimeout bounds the wait for MinReplicas replicas, whatever the
	// client's ReadTimeout. A negative value fails with [ErrInvalidOption]
	// before anything is sent.
	// Default: a tenth of the TTL, at least 1 ms.
	ReplicaTimeout time.Duration

	// MinHold keeps a lock or permit held for at least this long after the
	// obtain returned, however early it is released: a [Lock.Release] (or
	// [Permit.Release]) before then leaves its keys to expire by themselves
	// at that time instead of deleting them; waiters see it held until then,
	// and nothing is handed over before. The Lock (or Permit) is released
	// all the same: a Refresh then returns [ErrNotObtained] and another
	// Release [ErrLockNotHeld], sending nothing. Fence tokens are unchanged;
	// see docs/scheduling.md. A negative value fails with [ErrInvalidOption]
	// before anything is sent, and so does a MinHold on an RWMutex's holds
	// or an election, which do not support it.
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
