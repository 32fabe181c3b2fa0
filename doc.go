// Package redislock provides distributed locks on Redis: leases that many
// processes can take on one or several keys, with fencing tokens for the
// resource they protect.
//
// It is a drop-in replacement for github.com/bsm/redislock v0.10.0 (with
// its fencing addition): the same names, signatures and behaviour, with that
// library's known defects fixed. It works with any go-redis v9 client:
// single node, Sentinel (failover client), Cluster, Ring, UniversalClient.
//
// # Use
//
//	locker := redislock.New(rdb)
//	lock, err := locker.Obtain(ctx, "report:daily", 30*time.Second, nil)
//	if errors.Is(err, redislock.ErrNotObtained) {
//		return // another replica runs it
//	} else if err != nil {
//		return err
//	}
//	defer lock.Release(ctx)
//
// [Client.Obtain], [Client.ObtainMulti], [Lock.Refresh], [Lock.Release] and
// [Lock.TTL] each run one Lua script on the server, one round trip, on the
// caller's goroutine; the package starts no goroutines. A held lock is
// waited for only when [Options.RetryStrategy] says so ([LinearBackoff],
// [ExponentialBackoff], [LimitRetry]); the wait ends at the context's
// deadline or, when it has none, after the TTL.
//
// Each lock key is a plain Redis string "<len>:<token>:<fence>:<metadata>",
// so tools and other libraries (bsm/redislock among them) see a held key.
// Ownership is the exact token: the length prefix keeps the token "foo"
// from matching a holder "foobar".
//
// # What a Redis lock does not guarantee
//
// A lock here is a lease: it expires after its TTL whether or not its holder
// has finished. Three things can therefore let two processes believe they
// hold the same lock:
//
//   - The holder pauses (a GC pause, a stopped VM, a slow disk, a network
//     stall) past the TTL. The key expires, another process obtains it, and
//     the first one resumes without knowing. Refresh in time (a watchdog)
//     narrows this window but cannot close it: the pause can come between
//     the check and the write.
//   - Redis replicates asynchronously. On a failover (Sentinel or Cluster)
//     a lock written just before the master died may be missing on the
//     promoted replica, and someone else can obtain it there.
//   - Expiry is measured by the server's clock; the holder measures its own
//     lease on its own clock. Clocks that jump (not just drift) shorten
//     leases unexpectedly.
//
// A lock used for efficiency (do not run a job twice) can live with this. A
// lock used for correctness (never let two writers in) also needs fencing.
//
// # Fencing tokens
//
// With [Options.FenceKey] set, each new acquisition gets a token greater
// than every token issued before for that fence key ([Lock.FenceToken]).
// The holder sends it with every write; the protected resource remembers the
// highest token it accepted and refuses lower ones. A holder that paused and
// lost its lease then cannot overwrite the work of the one that followed it:
// its token is lower.
//
// The token is max(counter+1, server time in microseconds), so it keeps
// increasing even when the counter is lost: after a restart without
// persistence, or a failover before the counter reached the replica. That
// rests on the servers' clocks being roughly in sync, and a failover taking
// longer than their skew. A re-entrant obtain (same token, lock still held)
// keeps the token of the acquisition it continues. Release leaves the
// counter alone.
//
// # Redis Cluster
//
// One script can only touch keys of one hash slot. Give every key of one
// lock, and its fence key, the same hash tag: "{job}:lock", "{job}:fence".
// With a *redis.ClusterClient, keys of different slots are refused with a
// [*CrossSlotError] before anything is sent; [HashSlot] computes a key's
// slot.
package redislock
