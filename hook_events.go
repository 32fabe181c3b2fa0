package redislock

import "time"

// Outcome is the result of an obtain call or of one attempt.
type Outcome uint8

// The outcomes of an obtain call or attempt.
const (
	// OutcomeObtained: the lock was taken.
	OutcomeObtained Outcome = iota + 1
	// OutcomeNotObtained: the lock is held by another; for a call, the
	// error matches [ErrNotObtained].
	OutcomeNotObtained
	// OutcomeError: Redis failed (for an attempt, possibly a transient
	// error that the call retries), or the call ended with another error.
	OutcomeError
)

// String returns "obtained", "not_obtained" or "error".
func (o Outcome) String() string { return name(o, "obtained", "not_obtained", "error") }

// WaitMode says how an obtain call waited for the lock.
type WaitMode uint8

// The ways of waiting.
const (
	// WaitNone: the first attempt decided; the call did not wait.
	WaitNone WaitMode = iota + 1
	// WaitPolled: the call slept between attempts.
	WaitPolled
	// WaitEvents: some attempt followed a block on Redis waiting for a
	// release ([WaitForRelease]).
	WaitEvents
)

// String returns "none", "poll" or "event".
func (w WaitMode) String() string { return name(w, "none", "poll", "event") }

// LostReason says why a keep-alive lost its lock.
type LostReason uint8

// The reasons for losing a lock.
const (
	// LostGone: a refresh found a key gone (expired or deleted).
	LostGone LostReason = iota + 1
	// LostTaken: a refresh found a key held by another token (never for
	// permits and read holds, which are only ever gone).
	LostTaken
	// LostExpired: the lease ran out on the local clock without a
	// successful refresh, while Redis failed, hung or was unreachable.
	LostExpired
	// LostMaxHold: [KeepAliveOptions.MaxHold] was reached.
	LostMaxHold
	// LostError: a refresh failed with an error that is not transient.
	LostError
)

// String returns "gone", "taken", "expired", "max_hold" or "error".
func (r LostReason) String() string { return name(r, "gone", "taken", "expired", "max_hold", "error") }

// ObtainEvent describes an obtain call ([Client.Obtain],
// [Client.ObtainMulti], and the others of [Hook]). ObtainStart sees the
// first three fields; ObtainDone sees them all.
type ObtainEvent struct {
	Kind Kind
	Keys []string      // the lock keys, in the caller's order (see [Hook] for the other kinds)
	TTL  time.Duration // as asked

	Lock       *Lock         // the lock obtained, or nil (always nil for kinds other than KindLock)
	Handle     Handle        // the handle obtained, of any kind, or nil
	Outcome    Outcome       // the call's result
	Err        error         // the error the call returns, or nil
	Attempts   int           // attempts made (scripts sent), at least 1
	Wait       WaitMode      // how the call waited
	HandedOver bool          // obtained with a grant: another holder's Release handed it over
	Duration   time.Duration // from ObtainStart to ObtainDone
}

// AttemptEvent describes one attempt of an obtain call.
type AttemptEvent struct {
	Kind Kind
	Keys []string

	Attempt    int     // 1 for the first
	Outcome    Outcome // OutcomeNotObtained: held by another
	Err        error   // the Redis error of an attempt with OutcomeError
	Blocked    bool    // sent after a block on Redis waiting for a release ([WaitForRelease])
	HandedOver bool    // obtained with the grant of a release
}

// ReleaseEvent describes a [Lock.Release] call, or a release of another
// kind (see [Hook]). ReleaseStart sees the first four fields; ReleaseDone
// sees them all.
type ReleaseEvent struct {
	Kind   Kind
	Keys   []string
	Lock   *Lock  // nil for kinds other than KindLock
	Handle Handle // the handle released, of any kind

	Err        error // the error Release returns, or nil
	HandedOver int   // keys handed over to a waiter instead of deleted
	// EndsHold is true for the first release of a handle obtained through
	// this Client, unless a [Hook.Lost] came first: each handle that was
	// reported obtained ends its hold once, by a release or a loss.
	EndsHold bool
	Held     time.Duration // from the obtain to now; 0 unless EndsHold
	Duration time.Duration // of the Release call
}

// RefreshEvent describes a Refresh call ([Lock.Refresh] and the others)
// or a keep-alive's refresh. RefreshStart sees every field but Err and
// Duration.
type RefreshEvent struct {
	Kind      Kind
	Keys      []string
	Lock      *Lock  // nil for kinds other than KindLock
	Handle    Handle // the handle refreshed, of any kind
	TTL       time.Duration
	KeepAlive bool // a refresh of a keep-alive ([Lock.KeepAlive] and the others), on its goroutine

	Err      error // nil, [ErrNotObtained] when the lock was lost, or a Redis error
	Duration time.Duration
}

// LostEvent describes a handle that a keep-alive lost.
type LostEvent struct {
	Kind   Kind
	Keys   []string
	Lock   *Lock  // nil for kinds other than KindLock
	Handle Handle // the handle lost, of any kind

	Reason   LostReason
	Err      error         // [KeepAlive.Err]
	EndsHold bool          // as for [ReleaseEvent.EndsHold]
	Held     time.Duration // from the obtain to now; 0 unless EndsHold
}

// name returns the name of v, the n-th value of its enumeration (from 1),
// or "unknown".
func name[T ~uint8](v T, names ...string) string {
	if v < 1 || int(v) > len(names) {
		return "unknown"
	}
	return names[v-1]
}
