package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode"
)

// keyRun tells this process's keys from those of earlier runs against a
// server that outlived them.
var keyRun = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}()

var (
	tags   sync.Map // testing.TB -> string
	tagSeq atomic.Uint64
)

// Tag returns the hash tag of t's keys: "{NAME#RUN.N}", where NAME is t's
// name with "{", "}", spaces and control characters replaced by "_", RUN is
// random per test binary and N counts the tests of this process that asked
// for a tag. Every call for one test returns the same tag; no two tests,
// parallel or repeated with -count, get the same one. It is safe for
// concurrent use.
func Tag(t testing.TB) string {
	if tag, ok := tags.Load(t); ok {
		return tag.(string)
	}
	tag := "{" + sanitize(t.Name()) + "#" + keyRun + "." + strconv.FormatUint(tagSeq.Add(1), 10) + "}"
	actual, loaded := tags.LoadOrStore(t, tag)
	if !loaded {
		t.Cleanup(func() { tags.Delete(t) })
	}
	return actual.(string)
}

// Key returns the key called name for test t: [Tag] followed by ":" and name,
// as in "{TestObtain/redis#3f9a1c2b.7}:name". All keys of one test share a
// hash slot, so multi-key commands and scripts work on a Cluster, and keys
// of different tests never collide on a shared server. The same t and name
// always give the same key. It is safe for concurrent use.
func Key(t testing.TB, name string) string {
	return Tag(t) + ":" + name
}

// sanitize replaces the characters that would end or nest a hash tag, and
// those that are awkward in redis-cli or logs, with "_".
func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '{' || r == '}' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return '_'
		}
		return r
	}, name)
}
