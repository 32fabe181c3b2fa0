// Package chaos checks redislock under faults: it records what many
// concurrent clients did (obtain, keep the lock with a keep-alive, write to
// a fenced resource, release) and checks the history by code.
//
// The package itself is the checker ([History], [Check], [CheckLimit],
// [CheckRW], [Store]); its tests drive real redis-server processes through
// an in-process toxiproxy (latency, stalls, replies lost after the command
// ran, resets, partitions) and through server restarts, Sentinel and
// Cluster failovers and client pauses, with workloads of locks,
// semaphores, read-write locks, leader elections and sessions (each
// worker's locks kept alive by a Session of its own), and of locks on a
// Quorum of five independent masters (latency and partitions of some
// links, SIGKILL of a minority or a majority with and without
// persistence, a majority emptied while it claims persistence), polling and (on
// clients whose read timeout leaves room for a block) waiting with
// WaitForRelease, then check each history. It is its own module, so that toxiproxy
// and its dependencies never reach the library's go.mod.
//
// `make test` runs a short schedule of every fault kind; `make chaos` runs
// the long one (go test -chaos.long) and prints a table per fault kind.
//
// What is checked, per lock key:
//
//   - Fencing: the [Store] (the protected resource) never accepted a write
//     whose token was lower than one it had accepted before, and tokens
//     follow real time: an acquisition that began after another ended has a
//     higher fence token, even across data loss.
//   - Mutual exclusion: two acquisitions whose holders both believed they
//     held the lock at the same moment, by their local validity (from the
//     moment Obtain returned until the earliest of: the validity its
//     keep-alive last reported (KeepAlive.ValidUntil, recorded before each
//     write and when the keep-alive ends: the send time of the last
//     successful obtain or refresh plus the TTL, less a margin), the
//     moment it saw the keep-alive end, and the start of Release; for a
//     client that refreshes by hand, the send time of the last successful
//     Obtain or Refresh plus the TTL). None is expected without failover or
//     data loss.
//   - No obtain of a held lock: no Obtain call that ran entirely inside
//     another holder's validity returned a lock.
//   - No early loss: no Refresh, Release or keep-alive found the lock gone
//     inside the holder's validity.
//
// Validity is measured on the client's monotonic clock from a time taken
// before the command was sent, so it never outlasts the key on the server
// (all processes share one machine and one clock here).
//
// The other primitives are checked the same way, each by its own rule of
// holders at once: [CheckLimit] for a semaphore (never more than its limit
// believing they hold a permit), [CheckRW] for a read-write lock (a writer
// overlaps nobody; readers share), [Check] for a leader election (a
// leadership is an acquisition whose token is its term).
//
// A resource that the N holders of a semaphore write at once cannot be
// fenced by one highest token: it would refuse the N-1 valid holders older
// than the newest. [Store] models it as N slots, each with its own
// monotonic token ([SlotKey], [Store.Claim]): a new permit takes a slot
// whose last writer's permit is no longer live (as Semaphore.Holders reads
// it after the permit was granted) and only with a higher token, and writes
// there. What is checked per slot is what is checked per lock key: no
// write accepted below a token the slot accepted before, and no valid
// holder's write refused (that would mean a live permit was taken for dead,
// or the limit was exceeded). A holder paused past its permit's TTL finds
// its slot taken over by a newer permit and its write refused.
package chaos
