// Command bench compares this module's locks with the alternatives, side by
// side in one run against one redis-server that internal/redistest starts
// on 127.0.0.1: github.com/bsm/redislock, github.com/go-redsync/redsync/v4
// (one goredis/v9 pool), github.com/redis/rueidis/rueidislock (KeyMajority
// 1, on its own rueidis client) and, as the floor, plain go-redis script
// calls doing the same atomic work. PING round trips are measured beside.
//
// Workloads:
//
//  1. uncontended Obtain+Release on distinct keys, 1 and 32 goroutines;
//  2. a failed Obtain on a held key, without retry;
//  3. Refresh of a held lock;
//  4. one hot key, 8 and 64 workers, each with its own client and all
//     sharing one, each holding the lock for 1 ms, every library with its
//     recommended waiting setting, through the runner of bench/contention;
//     the floor there is a fair handover with no lock around it (a list
//     holding one token: BLPOP takes it, RPUSH hands it on), the least a
//     handover to the client blocked longest costs;
//  5. 10,000 locks held at once: Redis memory per lock.
//
// and, after workloads 6–8 (semaphore, read-write lock, native commands):
//
//  9. Obtain+Release on 3 and 5 independent redis-servers of their own
//     (issue 35): this module's Quorum, unfenced and with a FenceKey,
//     beside redsync's Redlock (redsync.New with one goredis/v9 pool per
//     server) and a floor of two rounds of PING to every server, in turns:
//     time, allocations, round trips and commands per operation, and the
//     issue's targets (go run . -quorum-only runs it alone);
//  10. 1,000, 10,000 and 100,000 locks held at once, each kept alive by a
//     KeepAlive of its own or all by one Session (issue 34): goroutines, Go
//     heap per lock, round trips, Redis CPU per lease refresh, leases lost
//     (docs/sessions.md; go run . -sessions-only runs it alone).
//
// In workloads 1–3 the libraries take turns, in a new random order each
// cycle (one operation per turn with one goroutine, 20 ms of all goroutines
// with 32), so that every library meets the same machine; their
// allocations come from testing.Benchmark, counted by the runtime for every
// goroutine of the process. The hot-key runs of all libraries take turns
// too, twice, and each library's two runs are pooled.
//
// Run it with make bench, from the repository's root, which writes
// results/results.md and results/chart.svg here:
//
//	go run . -out results
//
// It takes about three and a half minutes on two cores (workload 10 about
// 45 s of it); go run . -h lists the durations that can be changed.
//
// With -contention it prints one table instead (make bench-contention,
// about a minute): this library's hot key per retry strategy (-contention
// strategies), or the prototypes of the designs that event-driven waiting
// was chosen from, beside WaitForRelease and redsync's polling in the same
// run (-contention designs). These tables only print numbers. The tests of
// this package (part of make test) only check, in seconds, that every
// adapter obtains, fails on a held key, refreshes, releases and waits, and
// that the report and the chart render.
package main
