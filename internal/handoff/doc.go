// Package handoff is the engine of event-driven waiting: the wait queue of
// a key, the grant that a release hands to one waiter, and the sharing of
// one blocking connection by the waits of a process. The root package's
// [WaitForRelease] strategy is a small adapter over it; a semaphore, a
// read-write lock or an election that hands a resource over the same way
// plugs in with a waiting script of its own.
//
// # The waiting script
//
// A [Request] names a script (the root package's obtain.lua) that takes,
// after the caller's own KEYS and ARGV, the waiter's:
//
//	KEYS  the wait queue of each lock key, the wake-up list of each lock
//	      key (see [Companions]), the waiter's grant list ([GrantList]);
//	ARGV  the waiter id, the registration's life (ms), the reservation's
//	      life (ms), the id of the waiter of this process that blocks next
//	      ("" for none: it is named only when its registration may have
//	      been marked or may lapse, see lua/handover.lua; "+<id>" for one
//	      that joined its group with a requeue and has not registered,
//	      with [Request.Successors]: its grant list is then one KEY more,
//	      and an attempt that obtains the keys registers it and leaves the
//	      placeholder there) and the 1-based
//	      index of the key it waits for, then "1" for the waiter's first
//	      attempt ("0" otherwise): it has no registration or grant list yet;
//	      "2" for a first attempt sent with the first block (a requeue,
//	      see [Request.Requeue]), which never takes the keys: where it
//	      would, it registers the waiter in key 1's queue and pushes a
//	      wake-up without reservation ("~free") on key 1's wake-up list.
//
// It replies an integer >= 0 when it obtained the keys (a value the caller
// reads, obtain.lua's fence token), and otherwise {code, i, reserved}: code
// -1 when the key that holds it up has no expiry, -(ms+1) when it expires
// in ms (at most: the wait reads no expiry of a reserved key); i the
// 1-based index of that key; reserved 1 when that key is reserved for
// another waiter's grant (the requeue attempt, whose reply the wait does
// not read, may reply the code alone). A failed attempt registers the waiter in key i's
// queue; an obtaining one removes it from every queue. The grant list:
// every attempt but the first takes it whole (LPOP of two: a grant that
// BLMOVE pushed at its head, then the placeholder "~"), and a failed one
// leaves the placeholder in it with a TTL longer than the next block
// (obtain.lua: twice the registration's life), so that BLMOVE pushes onto a
// list that expires by itself whatever becomes of the waiter.
// A script called without the waiter's part is a plain attempt, replying
// the integer alone; a poll sends [Request.PollArgs] where a script
// replies the holder's expiry in it only when asked (obtain.lua: ARGV[5]
// "").
//
// # What a wait does
//
// [Registry.Wait] is a small state machine: attempting (one script call),
// requeuing (the first attempt, the first block and the attempt after it,
// in one pipeline, for a caller that handed the keys over a moment ago: at
// once, or when the lead of its group passes to it; a wait that the
// caller's release registered, [Request.Registered], skips that first
// attempt and starts blocking),
// blocking (BLMOVE from the wake-up list to the grant list and the
// attempt, in one pipeline: Redis runs the attempt as soon as a release
// serves the block), sleeping (in the group of goroutines
// of this process that wait for the key through one client, until the
// group's lead passes to it, the holder can have expired, or the deadline),
// pausing (after a transient error) and polling (a client without
// pipelines, a server that refuses BLMOVE, a key without companions). It
// runs on the caller's goroutine and starts none.
//
// The [Registry] of the groups is owned by the caller: the root package
// uses [Default], the only package-level mutable state of the module.
package handoff
