package handoff

import (
	"testing"
	"testing/synctest"
	"time"
)

// A requeue hint says how the next Obtain of its key starts: under the
// registration its release made while it has time to block before that
// registration lapses (registeredWithin), as a requeue with the same id
// until requeueWithin, then as any Obtain; an Obtain of another key leaves
// it.
func TestHintTake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var h Hint
		key := "job"
		if id, at, requeue := h.Take(key); id != "" || !at.IsZero() || requeue {
			t.Errorf("an empty hint: %q, %v, %v", id, at, requeue)
		}
		start := time.Now()
		h.HandedOver(&key, "w1", start)
		if _, _, requeue := h.Take("other"); requeue {
			t.Error("another key requeues")
		}
		time.Sleep(registeredWithin - time.Millisecond)
		if id, at, requeue := h.Take(key); id != "w1" || !at.Equal(start) || requeue {
			t.Errorf("within registeredWithin: %q, %v, %v; want w1 registered at the release", id, at, requeue)
		}
		if id, _, requeue := h.Take(key); id != "" || requeue {
			t.Errorf("taken twice: %q, %v", id, requeue)
		}

		h.HandedOver(&key, "w2", time.Now())
		time.Sleep(registeredWithin)
		if id, at, requeue := h.Take(key); id != "w2" || !at.IsZero() || !requeue {
			t.Errorf("after registeredWithin: %q, %v, %v; want a requeue as w2", id, at, requeue)
		}

		h.HandedOver(&key, "", time.Now())
		if id, at, requeue := h.Take(key); id != "" || !at.IsZero() || !requeue {
			t.Errorf("a release that registered no one: %q, %v, %v; want a requeue", id, at, requeue)
		}

		h.HandedOver(&key, "w3", time.Now())
		time.Sleep(requeueWithin)
		if id, _, requeue := h.Take(key); id != "" || requeue {
			t.Errorf("after requeueWithin: %q, %v", id, requeue)
		}
		var none *Hint
		none.HandedOver(&key, "w4", time.Now()) // a nil hint records nothing
	})
}
