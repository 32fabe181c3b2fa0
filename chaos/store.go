package chaos

import "sync"

// Store is a protected resource that applies the fencing rule: for each key,
// it refuses a write whose token is lower than the highest token it has
// accepted for that key (equal is accepted: one holder writes many times).
// Every write is recorded in the [History] as an [OpWrite] event, timed and
// numbered while the store is locked, so the history orders writes exactly
// as the store applied them. It is safe for concurrent use.
type Store struct {
	h *History

	mu   sync.Mutex
	keys map[string]*storeKey
}

type storeKey struct {
	highest int64 // the highest token accepted
	seq     int64 // writes so far, accepted or not
}

// NewStore returns an empty store that records its writes in h.
func NewStore(h *History) *Store {
	return &Store{h: h, keys: make(map[string]*storeKey)}
}

// Write applies a write to key with token, from client's acquisition acq,
// and reports whether it was accepted.
func (s *Store) Write(client, acq int, key string, token int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.keys[key]
	if k == nil {
		k = &storeKey{}
		s.keys[key] = k
	}
	now := s.h.Now()
	k.seq++
	ok := token >= k.highest
	if ok {
		k.highest = token
	}
	res := OK
	if !ok {
		res = No
	}
	s.h.Add(Event{Op: OpWrite, Client: client, Acq: acq, Key: key, Start: now, End: now, Result: res, Token: token, Seq: k.seq})
	return ok
}
