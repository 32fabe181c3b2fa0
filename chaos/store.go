package chaos

import (
	"fmt"
	"sync"
)

// Store is a protected resource that applies the fencing rule: for each key,
// it refuses a write whose token is lower than the highest token it has
// accepted for that key (equal is accepted: one holder writes many times).
// Every write is recorded in the [History] as an [OpWrite] event, timed and
// numbered while the store is locked, so the history orders writes exactly
// as the store applied them. It is safe for concurrent use.
//
// A resource that N holders of a semaphore write at once cannot keep one
// highest token for all of them: it would refuse the N-1 holders whose
// permits are older than the newest, though they are valid. It is made of
// N slots instead, each fenced on its own, and a new holder takes a slot
// with [Store.Claim]: only one whose last writer's permit is no longer
// live, and only with a higher token. A holder paused past its permit's
// TTL then finds its slot taken by a newer permit, and its write refused.
type Store struct {
	h *History

	mu   sync.Mutex
	keys map[string]*storeKey
}

type storeKey struct {
	highest int64 // the highest token accepted
	seq     int64 // writes so far, accepted or not
	// above: channels of Above, closed once highest exceeds their token.
	above []aboveWaiter
}

type aboveWaiter struct {
	token int64
	ch    chan struct{}
}

// NewStore returns an empty store that records its writes in h.
func NewStore(h *History) *Store {
	return &Store{h: h, keys: make(map[string]*storeKey)}
}

// key returns the state of key, made on first use. s.mu must be held.
func (s *Store) key(key string) *storeKey {
	k := s.keys[key]
	if k == nil {
		k = &storeKey{}
		s.keys[key] = k
	}
	return k
}

// Write applies a write to key with token, from client's acquisition acq,
// and reports whether it was accepted.
func (s *Store) Write(client, acq int, key string, token int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(client, acq, key, token)
}

// write is Write with s.mu held.
func (s *Store) write(client, acq int, key string, token int64) bool {
	k := s.key(key)
	now := s.h.Now()
	k.seq++
	ok := token >= k.highest
	if ok {
		k.highest = token
		k.above = keepWaiting(k.above, token)
	}
	res := OK
	if !ok {
		res = No
	}
	s.h.Add(Event{Op: OpWrite, Client: client, Acq: acq, Key: key, Start: now, End: now, Result: res, Token: token, Seq: k.seq})
	return ok
}

// keepWaiting closes the channels of ws waiting for a token below highest
// and returns the others.
func keepWaiting(ws []aboveWaiter, highest int64) []aboveWaiter {
	kept := ws[:0]
	for _, w := range ws {
		if w.token < highest {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	return kept
}

// SlotKey returns the key of slot i of key's slots (see [Store.Claim]):
// "<key>#<i>".
func SlotKey(key string, i int) string { return fmt.Sprintf("%s#%d", key, i) }

// Claim takes one of the n slots of key ([SlotKey] 0 … n-1, each fenced on
// its own) for token, the fence token of client's acquisition acq: a slot
// never written, or one whose highest token is below token and not live
// (live reports the tokens of the permits still held, as the holder read
// them after it got its own). Of those it takes the one with the lowest
// highest token (the longest unused), as a write of token to it, recorded
// as such, and returns its key. It returns false, recording nothing, when
// no slot can be taken.
//
// Read after the holder got its permit, live holds every permit older than
// it that is still live (its token is lower: tokens follow real time), so
// no valid holder's slot is taken; a permit granted since has a higher
// token than the claimer, so its slot is not taken either.
func (s *Store) Claim(client, acq int, key string, n int, token int64, live func(token int64) bool) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, bestToken := -1, int64(0)
	for i := range n {
		k := s.keys[SlotKey(key, i)]
		var highest int64
		if k != nil {
			highest = k.highest
		}
		if highest >= token || (highest != 0 && live(highest)) {
			continue
		}
		if best < 0 || highest < bestToken {
			best, bestToken = i, highest
		}
	}
	if best < 0 {
		return "", false
	}
	slot := SlotKey(key, best)
	s.write(client, acq, slot, token)
	return slot, true
}

// Above returns a channel that is closed once the store has accepted a
// write to key with a token above token (at once if it has already).
func (s *Store) Above(key string, token int64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.key(key)
	ch := make(chan struct{})
	if k.highest > token {
		close(ch)
		return ch
	}
	k.above = append(k.above, aboveWaiter{token: token, ch: ch})
	return ch
}
