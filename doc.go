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
// caller's goroutine; the package starts no goroutines, except the one of
// [Lock.KeepAlive], started explicitly and owned by the [KeepAlive] handle
// that stops it. A held lock is
// waited for only when [Options.RetryStrategy] says so ([LinearBackoff],
// [ExponentialBackoff], [LimitRetry], with [Jitter], [FullJitter] or
// [DecorrelatedJitter] to spread the retries); the wait ends at the
// context's deadline or, when it has none, after the TTL. With
// [WaitForRelease] a waiter does not poll: it blocks on Redis, and the
// holder's Release hands the lock over to the waiter that has waited
// longest, in one round trip.
//
// Each lock key is a plain Redis string "<len>:<token>:<fence>:<metadata>",
// so tools and other libraries (bsm/redislock among them) see a held key.
// Ownership is the exact token: the length prefix keeps the token "foo"
// from matching a holder "foobar".
//
// # Keeping a lock alive
//
// Work that may outlive the TTL keeps the lock with [Lock.KeepAlive] and
// runs under its [KeepAlive.Context], which is cancelled, with
// [ErrLockLost] as its cause, the moment the lock is lost:
//
//	ka, err := lock.KeepAlive(30*time.Second, nil) // refreshes every 10s
//	if err != nil {
//		return err
//	}
//	ctx, cancel := ka.Context(ctx)
//	defer cancel()
//	err = work(ctx) // defer lock.Release(ctx) stops the keep-alive first
//
// The handle tracks, on the monotonic clock, until when the lock is
// certainly held: the send time of the last successful refresh, plus the
// TTL, less a margin for clock drift. It signals the loss when a refresh
// finds the lock gone or taken, and, with a timer of its own, when that
// time passes without a successful refresh (Redis failing or hanging):
// before the key can expire on the server. [Client.Attach] gives another
// process a handle from the keys and token, to release or refresh the lock
// with the same ownership check; [Client.Inspect] reads a lock key without
// its token.
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
// What a failover does to locks was measured (failover_test.go: Redis 7.0
// and Valkey 8.0 alike, 2 cores, Sentinel down-after-milliseconds 1000,
// Cluster cluster-node-timeout 2000; README.md has the table):
//
//   - A lock whose key had reached the replica survives every failover. One
//     whose key had not is gone from the new master: [Lock.Refresh] returns
//     [ErrNotObtained], [Lock.Release] [ErrLockNotHeld], [Lock.TTL] 0, and
//     another process can obtain it. A coordinated CLUSTER FAILOVER loses
//     nothing: it waits for the replica (lock requests stall ~50 ms).
//   - SENTINEL FAILOVER: the failover client reaches the new master ~1.2 s
//     after the command; for about a second before, the locks it takes are
//     still granted by the old master, although the replica has already
//     replaced it, and are lost. A client pinned to the old master can hold
//     a lock there, beside the same lock on the new master, until the old
//     master turns into a replica ~11 s after the command. CLUSTER FAILOVER
//     FORCE: the same for ~0.1 s.
//   - A killed master: no lock for ~2.3 s behind Sentinel, ~4-5 s on a
//     Cluster (up to 12 s on a loaded machine). A go-redis ClusterClient
//     only finds the new master when it reloads its slot map, by default
//     once a minute (ClusterOptions.ClusterStateReloadInterval), since a
//     dead master sends no MOVED. The lock scripts therefore ask a
//     *redis.ClusterClient to reload (ReloadState) after every network
//     failure; the next attempt reaches the new master about a second after
//     its promotion.
//   - Fence tokens keep increasing: the counter on the new master was behind
//     by the lost acquisitions, and the next token, from the server's clock,
//     was above them all.
//   - A promoted replica has no script cached: the first call of each verb
//     meets NOSCRIPT and goes through EVAL, transparently.
//
// [Options.MinReplicas] closes most of that window: each obtain is confirmed
// with Redis WAIT on the lock's own connection and given back when too few
// replicas acknowledge it. In the chaos module's fault tests (12 forced
// Sentinel failovers, 8 clients on 2 locks, 200 ms leases) the same
// schedule lost 24 locks and let two holders overlap 18 times without it,
// and lost none with MinReplicas 1. The price is availability: with one
// replica, the new master has none until the old master rejoins as its
// replica, and no lock can be confirmed meanwhile (350 acquisitions instead
// of 2064). WAIT is no consensus: an acknowledging replica can still lose
// the election to another, and Refresh is not confirmed.
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
// slot, and [HashTag] builds keys that share one. A go-redis Ring places
// keys by their hash tag too, and runs a script on the shard of its first
// key: give the keys of one lock a common tag there as well (nothing checks
// it, as a Ring has no slots).
package redislock
