package redislock

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
}

func (o *Options) retryStrategy() RetryStrategy {
	if o == nil || o.RetryStrategy == nil {
		return NoRetry()
	}
	return o.RetryStrategy
}

func (o *Options) metadata() string {
	if o == nil {
		return ""
	}
	return o.Metadata
}

func (o *Options) token() string {
	if o == nil {
		return ""
	}
	return o.Token
}

func (o *Options) fenceKey() string {
	if o == nil {
		return ""
	}
	return o.FenceKey
}
