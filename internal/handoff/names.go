package handoff

import (
	"strings"

	"github.com/redislock/redislock/internal/keyslot"
)

// The suffixes of companion names (see [Companions]).
const (
	queueSuffix = ":redislock:waiters"
	wakeSuffix  = ":redislock:wake"
	untagged    = ":untagged"
	grantInfix  = ":redislock:grant:"
)

// Companions returns the keys that hand a lock over: for lock keys
// k1..kn, the slice k1..kn, then the wait queue of each key, then the
// wake-up list of each key (3n keys, the layout of release.lua and
// leave.lua). ok is false when some key cannot have companions in its own
// hash slot: a key without hash tag that contains "}".
//
// A key with a hash tag has the companions "<key>:redislock:waiters" and
// "<key>:redislock:wake": they share its slot and its prefix (an ACL key
// pattern that covers "locks:*" covers the companions of "locks:{job}"). A
// key without hash tag is put in braces, which keeps its slot, and marked:
// "{<key>}:redislock:waiters:untagged" and "{<key>}:redislock:wake:untagged".
// The names of the two forms end differently and each holds its lock key
// whole, so no two lock keys share a companion: "job" and "{job}" queue in
// "{job}:redislock:waiters:untagged" and "{job}:redislock:waiters".
func Companions(keys []string) (_ []string, ok bool) {
	size := 0
	for _, k := range keys {
		q, w, ok := companionLengths(k)
		if !ok {
			return nil, false
		}
		size += q + w
	}
	// One allocation for every name: each is a slice of it.
	var b strings.Builder
	b.Grow(size)
	for _, k := range keys {
		for _, suffix := range [2]string{queueSuffix, wakeSuffix} {
			if hasTag(k) {
				b.WriteString(k)
				b.WriteString(suffix)
				continue
			}
			b.WriteByte('{')
			b.WriteString(k)
			b.WriteByte('}')
			b.WriteString(suffix)
			b.WriteString(untagged)
		}
	}
	all := b.String()
	n := len(keys)
	out := make([]string, 3*n)
	copy(out, keys)
	at := 0
	for i, k := range keys {
		q, w, _ := companionLengths(k)
		out[n+i], out[2*n+i] = all[at:at+q], all[at+q:at+q+w]
		at += q + w
	}
	return out, true
}

// companionLengths returns the lengths of key's wait queue and wake-up list
// names; ok as for [Companions].
func companionLengths(key string) (queue, wake int, ok bool) {
	if hasTag(key) {
		return len(key) + len(queueSuffix), len(key) + len(wakeSuffix), true
	}
	if strings.IndexByte(key, '}') >= 0 {
		return 0, 0, false
	}
	extra := len("{}") + len(untagged)
	return len(key) + len(queueSuffix) + extra, len(key) + len(wakeSuffix) + extra, true
}

// GrantList names a waiter's grant list, the list its blocking call moves
// a grant to: "<key>:redislock:grant:<id>" for a first lock key with a hash
// tag, "{<key>}:redislock:grant:<id>" for one without. ok is false as for
// [Companions].
func GrantList(firstKey, id string) (_ string, ok bool) {
	if hasTag(firstKey) {
		return firstKey + grantInfix + id, true
	}
	if strings.IndexByte(firstKey, '}') >= 0 {
		return "", false
	}
	return "{" + firstKey + "}" + grantInfix + id, true
}

// hasTag reports whether Redis Cluster hashes key by a hash tag.
func hasTag(key string) bool { return keyslot.HasTag(key) }
