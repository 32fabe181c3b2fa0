package handoff

import (
	"sync/atomic"
	"time"
)

// Hint is a client's record of the key that its last release handed over
// to a waiter. A wait for that key through the client soon after (the
// loop that releases a lock and asks for it again) sends its first
// attempt with its first block in one round trip, instead of failing
// first ([Request.Requeue]): the key is most likely held or reserved by
// then. When that release also registered the client's next wait (a lock
// that was itself obtained so), the wait blocks at once, under that
// registration ([Request.Registered]). Locks of one key only. The zero
// value has no record; it is safe for concurrent use.
type Hint struct {
	last atomic.Pointer[requeueRecord] // nil when taken
}

// requeueRecord is one handover of a Hint.
type requeueRecord struct {
	key *string   // the key, in the Lock that released it
	id  string    // the waiter id its release registered, "" for none
	at  time.Time // before the release was sent
}

const (
	// requeueWithin is how long after the handover a hint holds: an
	// Obtain later than that starts as any other.
	requeueWithin = time.Second
	// registeredWithin is how long after the handover an Obtain blocks at
	// once under the registration of the release, which lapses
	// RegisteredLapse after it unless the waiter attempts: a block that
	// starts within registeredWithin ends with an attempt (which renews
	// it) before then. A later Obtain requeues under the same id, and its
	// first attempt renews the registration, or registers it again.
	registeredWithin = 500 * time.Millisecond
)

// RegisteredLapse is how long the registration of a releaser's next wait
// (release.lua's ARGV[2]) is live without an attempt of its own: a caller
// that does not ask again costs a handover no more than this.
const RegisteredLapse = time.Second

// RegisteredLapseArg is RegisteredLapse as a script argument, in
// milliseconds.
const RegisteredLapseArg = "1000"

// HandedOver records that the lock of key, a key of the lock that
// released it, was handed over by a release sent at at, which registered
// the waiter id (or "" for none). h may be nil.
func (h *Hint) HandedOver(key *string, id string, at time.Time) {
	if h == nil {
		return
	}
	h.last.Store(&requeueRecord{key: key, id: id, at: at})
}

// Take returns how a wait for key starts: with the waiter id that the
// hint's release registered ([Request.ID], "" for a new one), the time of
// that registration when the wait may block at once under it
// ([Request.Registered], zero otherwise), and whether it requeues
// ([Request.Requeue]). It forgets the hint: one wait uses it.
func (h *Hint) Take(key string) (id string, registered time.Time, requeue bool) {
	r := h.last.Load()
	if r == nil || *r.key != key {
		return "", time.Time{}, false
	}
	age := time.Since(r.at)
	if age >= requeueWithin || !h.last.CompareAndSwap(r, nil) {
		return "", time.Time{}, false
	}
	if r.id != "" && age < registeredWithin {
		return r.id, r.at, false
	}
	return r.id, time.Time{}, true
}

// Stale returns the registration that the hint's release made for a wait
// of another key than key, when it may still be live: the caller asks for
// key instead, and should take that registration back (the leave script
// on the returned key, with id) so that no handover of the other key
// reserves it for a waiter that will not come. It forgets the hint; ok is
// false when there is nothing to take back.
func (h *Hint) Stale(key string) (other, id string, ok bool) {
	r := h.last.Load()
	if r == nil || r.id == "" || *r.key == key || time.Since(r.at) >= RegisteredLapse || !h.last.CompareAndSwap(r, nil) {
		return "", "", false
	}
	return *r.key, r.id, true
}
