// Package handoff is the engine of event-driven waiting: the line of
// waiters of a key, the grant that a handover pushes to one waiter, and
// the sharing of one blocking connection by the waits of a process. The
// root package's [WaitForRelease] strategy is a small adapter over it; a
// semaphore, a read-write lock or an election that hands a resource over
// the same way plugs in with a waiting script of its own. The protocol,
// and why it serves waiters in the order they arrived, is in
// docs/waiting.md; the scripts' shared part is lua/handover.lua.
//
// # The waiting script
//
// A [Request] names a script (the root package's obtain.lua) that takes,
// after the caller's own KEYS and ARGV, the waiter's:
//
//	KEYS  the line of each lock key, then the liveness set of each lock
//	      key (see [Companions]);
//	ARGV  the waiter id (see [NewID]), the registration's life (ms), and
//	      "1" for the waiter's first attempt (it is in no line yet), "0"
//	      for a later one, "2" for a first attempt sent with the first
//	      block (a requeue, see [Request.Requeue]), which never takes the
//	      keys: a free key goes to the oldest live waiter of its line,
//	      possibly this one.
//
// It replies an integer >= 0 when it obtained the keys (a value the caller
// reads, obtain.lua's fence token), and otherwise {code, i, reserved}: code
// -1 when the key that holds it up has no expiry, -(ms+1) when it can
// stay held ms more; i the 1-based index of that key; reserved 1 when
// that key is reserved for another waiter (the requeue attempt, whose
// reply the wait does not read, may reply the code alone). A failed
// attempt registers the waiter in key i's line; an obtaining one takes it
// out of every line. A key reserved for the waiter counts as free to its
// later attempts. A script called without the waiter's part is a plain
// attempt, replying the integer alone; a poll sends [Request.PollArgs]
// where a script replies the holder's expiry in it only when asked
// (obtain.lua: ARGV[5] "").
//
// The leave script takes [Companions] of the keys and the waiter id: it
// takes the waiter out of every line and passes on a key reserved for it.
//
// # What a wait does
//
// [Registry.Wait] is a small state machine: attempting (one script call),
// requeuing (the first attempt and the first block, in one pipeline, for
// a caller that handed the keys over a moment ago: at once, or when the
// lead of its group passes to it; a wait that the caller's release
// registered, [Request.Registered], skips that first attempt and starts
// blocking), blocking (BLPOP on the grant lists of the group's members;
// an attempt follows, whatever came), sleeping (in the group of goroutines
// of this process that wait for the key through one client, until the
// group's lead passes to it, a grant comes for it, the holder can have
// expired, its registration needs renewing, or the deadline), pausing
// (after a transient error) and polling (a client without pipelines, a
// server that refuses BLPOP, a key without companions). It runs on the
// caller's goroutine and starts none.
//
// The [Registry] of the groups is owned by the caller: the root package
// uses [Default], the only package-level mutable state of the module.
package handoff
