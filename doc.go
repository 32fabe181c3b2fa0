// Package redislock provides distributed locks on Redis: leases that many
// processes take on one or several keys, with a keep-alive that says when a
// lock is lost, fair waiting, and fencing tokens for the resource they
// protect.
//
// It is a drop-in replacement for github.com/bsm/redislock v0.10.0: the
// same names, signatures and behaviour, with that library's known defects
// fixed. It works with any go-redis v9 client: single node, Sentinel
// (failover client), Cluster, Ring, UniversalClient.
//
// # The pattern to copy
//
//	locker := redislock.New(rdb)
//	lock, err := locker.Obtain(ctx, "report:daily", 30*time.Second, nil)
//	if errors.Is(err, redislock.ErrNotObtained) {
//		return nil // another process holds it
//	} else if err != nil {
//		return err
//	}
//	defer lock.Release(ctx) // stops the keep-alive, then deletes the key
//
//	ka, err := lock.KeepAlive(30*time.Second, nil)
//	if err != nil {
//		return err
//	}
//	ctx, cancel := ka.Context(ctx) // cancelled, cause ErrLockLost, when the lock is lost
//	defer cancel()
//	return work(ctx)
//
// # What is guaranteed
//
//   - Each attempt of [Client.Obtain], [Client.ObtainMulti] and
//     [Lock.Refresh], and each [Lock.Release] and [Lock.TTL], is atomic on
//     the server and sent from the caller's goroutine; ObtainMulti takes
//     every key or none.
//   - Ownership is the exact token: only the holder's token refreshes or
//     releases a lock, also through a handle from [Client.Attach].
//   - A held lock is waited for only as [Options.RetryStrategy] says, until
//     the context's deadline or, without one, for one TTL. A context that
//     ends while waiting gives an error matching both [ErrNotObtained] and
//     the context's error.
//   - Bad input (a TTL under 1 ms, empty or repeated keys, keys of several
//     Cluster slots) gets a typed error before anything is sent.
//   - Every key the package writes expires by itself, except fence counters.
//   - Goroutines run only behind an explicit call (such as [Lock.KeepAlive]),
//     owned by the handle it returns, which stops them ([KeepAlive.Stop],
//     [Lock.Release]). [WaitForRelease] waits in the caller's goroutine.
//   - With [Options.FenceKey], each new acquisition's [Lock.FenceToken] is
//     greater than every token issued before for that key, even after the
//     counter is lost (a restart without persistence, a failover), as long
//     as the servers' clocks are roughly in sync.
//
// # What is not
//
// A lock is a lease: it expires after its TTL whether or not its holder
// has finished. A holder that pauses past its lease (GC, a stopped VM), a
// failover that loses a lock not yet replicated (Redis replicates
// asynchronously; [Options.MinReplicas] narrows that window), or a clock
// that jumps can let two processes believe they hold one lock. A
// [KeepAlive] signals a loss it can see, before the key can expire, but not
// a pause of its own process. A lock used for correctness (never two
// writers) therefore also needs the protected resource to refuse stale
// fencing tokens; one used for efficiency (do not run a job twice) can do
// without.
//
// # Waiting
//
// [NoRetry], the default, tries once; the other strategies poll, except
// [WaitForRelease]: waiters stand in line on Redis, and the release hands
// the lock to the first.
//
// # Beyond the mutex
//
// [Client.Semaphore] gives at most N holders of one key, each permit a
// lease; [Client.RWMutex] many readers or one writer, writers never
// starved. Their handles have the methods, options, errors and waiting of
// [Lock]. [Client.Election] elects one leader, with a [Leadership] whose
// term fences and an Observe that reports every change. [Client.AddHook]
// reports what they all do, for metrics and traces.
//
// # Redis Cluster
//
// One script touches keys of one hash slot: give every key of one lock, and
// its fence key, the same hash tag ("{job}:lock", "{job}:fence"; see
// [HashTag]). A *redis.ClusterClient gets a [*CrossSlotError] otherwise.
// On a Ring, the same rule holds, unchecked.
//
// # Further reading
//
// Mechanism, measurements and design choices are in the repository's docs
// directory (https://github.com/redislock/redislock/tree/main/docs):
// keepalive.md, waiting.md, fencing.md, failover.md, safety.md, errors.md,
// acl-tls.md, benchmarks.md, cli.md, semaphore.md, rwmutex.md, election.md,
// observability.md, scheduling.md, sessions.md, quorum.md,
// migrating-from-bsm.md, and ARCHITECTURE.md for where the code lives.
package redislock
