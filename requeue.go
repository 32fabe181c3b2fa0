package redislock

import (
	"sync/atomic"
	"time"
)

// requeueHint is a Client's record of the key that its last release handed
// over to a waiter of [WaitForRelease]. An Obtain of that key with
// WaitForRelease through the Client soon after (the loop that releases a
// lock and asks for it again) sends its first attempt with its first block
// in one round trip, instead of failing first (internal/handoff's
// Request.Requeue): the key is most likely held or reserved by then.
// Locks of one key only.
type requeueHint struct {
	key atomic.Pointer[string] // the key (in the Lock that released it), nil when taken
	at  atomic.Int64           // when it was handed over, in Unix nanoseconds
}

// requeueWithin is how long after the handover a hint holds: an Obtain
// later than that starts as any other.
const requeueWithin = time.Second

// handedOver records that the lock of key, a key of the Lock that
// released it, was handed over just now. h may be nil.
func (h *requeueHint) handedOver(key *string) {
	if h == nil {
		return
	}
	h.at.Store(time.Now().UnixNano())
	h.key.Store(key)
}

// take reports whether key was handed over within requeueWithin, and
// forgets it then: one Obtain uses a hint.
func (h *requeueHint) take(key string) bool {
	p := h.key.Load()
	if p == nil || *p != key || time.Now().UnixNano()-h.at.Load() >= int64(requeueWithin) {
		return false
	}
	return h.key.CompareAndSwap(p, nil)
}
