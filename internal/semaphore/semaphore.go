// Package semaphore holds the parts of a semaphore that need none of the
// root package's types: the name of a key's companion hash, the marks its
// scripts reserve, and the reading of the holders script's reply. See
// docs/semaphore.md for the keys and the scripts.
package semaphore

import (
	"strings"
	"time"

	"github.com/redislock/redislock/internal/keyslot"
	"github.com/redislock/redislock/internal/value"
)

const (
	// PermitsSuffix ends the name of a semaphore's companion hash.
	PermitsSuffix = ":redislock:permits"
	// untagged ends the companion of a key without a hash tag.
	untagged = ":untagged"
	// ReservationMark starts the sorted-set member of a slot reserved for
	// a woken waiter (semaphore_lib.lua); no permit's token may start
	// with it.
	ReservationMark = "~"
	// Needs is the server that the semaphore's scripts need (PEXPIRETIME,
	// PEXPIREAT … GT), for ErrServerTooOld.
	Needs = "Semaphore needs Redis 7.0 or later (or Valkey)"
)

// PermitsKey returns the companion hash of key: "<key>:redislock:permits"
// for a key with a hash tag, "{<key>}:redislock:permits:untagged" for one
// without, so that both are in the key's hash slot. ok is false when key
// has no hash tag but contains "}", so that no companion can share its
// slot.
func PermitsKey(key string) (string, bool) {
	if keyslot.HasTag(key) {
		return key + PermitsSuffix, true
	}
	if strings.IndexByte(key, '}') >= 0 {
		return "", false
	}
	return "{" + key + "}" + PermitsSuffix + untagged, true
}

// Holder is one live permit, as lua/semaphore_holders.lua gives it. Its
// fields are those of the root's PermitInfo, in the same order, so that
// one converts to the other.
type Holder struct {
	Token      string
	Metadata   string
	FenceToken int64
	TTL        time.Duration
}

// ParseHolders reads the reply of lua/semaphore_holders.lua: a flat array
// of token, PTTL (ms) and "<fence>:<metadata>" for each live permit. ok is
// false for a reply the script never gives.
func ParseHolders(reply any) (_ []Holder, ok bool) {
	arr, ok := reply.([]any)
	if !ok || len(arr)%3 != 0 {
		return nil, false
	}
	out := make([]Holder, 0, len(arr)/3)
	for i := 0; i < len(arr); i += 3 {
		token, ok1 := arr[i].(string)
		ms, ok2 := arr[i+1].(int64)
		v, ok3 := arr[i+2].(string)
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		fence, meta := value.ParsePermit(v)
		out = append(out, Holder{token, meta, fence, time.Duration(ms) * time.Millisecond})
	}
	return out, true
}
