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
			writeCompanion(&b, k, suffix)
		}
	}
	return split(keys, b.String()), true
}

// split returns keys, then the queue and wake-up list names of each key,
// cut from all, which holds them in Companions' order.
func split(keys []string, all string) []string {
	n := len(keys)
	out := make([]string, 3*n)
	copy(out, keys)
	at := 0
	for i, k := range keys {
		q, w, _ := companionLengths(k)
		out[n+i], out[2*n+i] = all[at:at+q], all[at+q:at+q+w]
		at += q + w
	}
	return out
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

// names returns [Companions] of keys and the [GrantList] of waiter id,
// whose names share one allocation.
func names(keys []string, id string) (companions []string, grants string, ok bool) {
	grantLen := len(grantInfix) + len(id) + len(keys[0])
	if !hasTag(keys[0]) {
		grantLen += len("{}")
	}
	size := grantLen
	for _, k := range keys {
		q, w, ok := companionLengths(k)
		if !ok {
			return nil, "", false
		}
		size += q + w
	}
	var b strings.Builder
	b.Grow(size)
	for _, k := range keys {
		for _, suffix := range [2]string{queueSuffix, wakeSuffix} {
			writeCompanion(&b, k, suffix)
		}
	}
	writeCompanion(&b, keys[0], grantInfix)
	b.WriteString(id)
	all := b.String()
	return split(keys, all), all[len(all)-grantLen:], true
}

// writeCompanion writes the name of key's companion with suffix (a
// suffix of names or grantInfix), in the form companionLengths counts:
// the untagged marker ends the suffixes of the queue and wake list only.
func writeCompanion(b *strings.Builder, key, suffix string) {
	if hasTag(key) {
		b.WriteString(key)
		b.WriteString(suffix)
		return
	}
	b.WriteByte('{')
	b.WriteString(key)
	b.WriteByte('}')
	b.WriteString(suffix)
	if suffix != grantInfix {
		b.WriteString(untagged)
	}
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
