package handoff

import (
	"crypto/rand"
	"strconv"
	"strings"
	"time"

	"github.com/redislock/redislock/internal/keyslot"
)

// The suffixes of companion names (see [Companions]).
const (
	lineSuffix  = ":redislock:waiters"
	aliveSuffix = ":redislock:alive"
	untagged    = ":untagged"
)

// Companions returns the keys that hand a lock over: for lock keys
// k1..kn, the slice k1..kn, then the line of each key, then the liveness
// set of each key (3n keys, the layout of release.lua and leave.lua). ok
// is false when some key cannot have companions in its own hash slot: a
// key without hash tag that contains "}".
//
// A key with a hash tag has the companions "<key>:redislock:waiters" and
// "<key>:redislock:alive": they share its slot and its prefix (an ACL key
// pattern that covers "locks:*" covers the companions of "locks:{job}"). A
// key without hash tag is put in braces, which keeps its slot, and marked:
// "{<key>}:redislock:waiters:untagged" and "{<key>}:redislock:alive:untagged".
// The names of the two forms end differently and each holds its lock key
// whole, so no two lock keys share a companion: "job" and "{job}" queue in
// "{job}:redislock:waiters:untagged" and "{job}:redislock:waiters". A
// waiter's grant list is its line's name, ":" and its id ([GrantList]).
func Companions(keys []string) (_ []string, ok bool) {
	size := 0
	for _, k := range keys {
		l, ok := companionLength(k)
		if !ok {
			return nil, false
		}
		size += 2*l + len(aliveSuffix) - len(lineSuffix)
	}
	// One allocation for every name: each is a slice of it.
	var b strings.Builder
	b.Grow(size)
	for _, suffix := range [2]string{lineSuffix, aliveSuffix} {
		for _, k := range keys {
			writeCompanion(&b, k, suffix)
		}
	}
	all := b.String()
	n := len(keys)
	out := make([]string, 3*n)
	copy(out, keys)
	at := 0
	for i, k := range keys {
		l, _ := companionLength(k)
		out[n+i], at = all[at:at+l], at+l
	}
	for i, k := range keys {
		l, _ := companionLength(k)
		l += len(aliveSuffix) - len(lineSuffix)
		out[2*n+i], at = all[at:at+l], at+l
	}
	return out, true
}

// companionLength returns the length of key's line name; ok as for
// [Companions].
func companionLength(key string) (n int, ok bool) {
	if hasTag(key) {
		return len(key) + len(lineSuffix), true
	}
	if strings.IndexByte(key, '}') >= 0 {
		return 0, false
	}
	return len(key) + len(lineSuffix) + len("{}") + len(untagged), true
}

// writeCompanion writes the name of key's companion with suffix.
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
	b.WriteString(untagged)
}

// GrantList names the grant list of waiter id in line, a line of
// [Companions]: the list a handover pushes its grant on, and the waiter
// blocks on. It shares the line's slot and prefix.
func GrantList(line, id string) string { return line + ":" + id }

// Claim is the longest claim window: a waiter granted a key must take it
// within min(Claim, its TTL), or the key goes on (docs/waiting.md).
const Claim = 500 * time.Millisecond

// NewID returns a new waiter id for a wait whose lock lasts ttl, of no
// process: random text, ".", and its claim window in milliseconds
// (min([Claim], ttl), at least 1), which the scripts read from it
// (lua/handover.lua's claim()). A releaser registers its next wait with
// one.
func NewID(ttl time.Duration) string { return newID("", ttl) }

// newID is NewID for a waiter of the process whose tag is process:
// "<process>-<random>.<ms>", so that a grant of the process that lapses
// passes its other waiters over for a while (lua/handover.lua's
// tombstones, docs/waiting.md).
func newID(process string, ttl time.Duration) string {
	ms := strconv.FormatInt(max(min(Claim, ttl).Milliseconds(), 1), 10)
	if process == "" {
		return rand.Text() + "." + ms
	}
	return process + "-" + rand.Text()[:16] + "." + ms
}

// newProcessTag returns a new process tag: 10 characters of random text
// (50 bits), without "-".
func newProcessTag() string { return rand.Text()[:10] }

// hasTag reports whether Redis Cluster hashes key by a hash tag.
func hasTag(key string) bool { return keyslot.HasTag(key) }
