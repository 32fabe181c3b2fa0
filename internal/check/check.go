// Package check validates the arguments of a call before anything is sent
// to Redis. It returns plain data; the root package turns it into its
// errors.
package check

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/redislock/redislock/internal/keyslot"
)

// Nil reports whether v is nil, or a nil pointer in an interface (a nil
// *redis.Client passed as a RedisClient, which would panic inside go-redis).
func Nil(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	return r.Kind() == reflect.Pointer && r.IsNil()
}

// Keys returns what is wrong with the key list of a call (an empty list, an
// empty key, a fence key that is also a lock key, a repeated key), as the
// text that follows the error's name, or "" when nothing is.
func Keys(keys []string, fenceKey string) string {
	if len(keys) == 0 {
		return "no keys given"
	}
	for i, k := range keys {
		if k == "" {
			return fmt.Sprintf("key %d of %d is empty", i+1, len(keys))
		}
		if k == fenceKey {
			return fmt.Sprintf("fence key %q is also a lock key", k)
		}
	}
	if dup, ok := Duplicate(keys); ok {
		return fmt.Sprintf("key %q is given more than once", dup)
	}
	return ""
}

// Duplicate returns a key that occurs twice in keys. It allocates nothing
// for the short lists that locks use.
func Duplicate(keys []string) (string, bool) {
	if len(keys) <= 16 {
		for i, k := range keys {
			for _, other := range keys[i+1:] {
				if k == other {
					return k, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, ok := seen[k]; ok {
			return k, true
		}
		seen[k] = struct{}{}
	}
	return "", false
}

// MinHold returns what is wrong with a MinHold of d (negative, or above
// zero where it is not supported by the primitive by), as the text that
// follows the error's name, or "" when nothing is.
func MinHold(d time.Duration, supported bool, by string) string {
	switch {
	case d < 0:
		return fmt.Sprintf("negative Options.MinHold (%v)", d)
	case d > 0 && !supported:
		return "Options.MinHold is not supported by " + by
	}
	return ""
}

// Slots returns nil when every key of keys (keys is not empty), and
// fenceKey when it is not empty, hashes to one Redis Cluster slot.
// Otherwise it returns every key, the lock keys first and then the fence
// key, with the slot of each.
func Slots(keys []string, fenceKey string) (all []string, slots []int) {
	first := keyslot.Slot(keys[0])
	same := true
	for _, k := range keys[1:] {
		if keyslot.Slot(k) != first {
			same = false
			break
		}
	}
	if same && (fenceKey == "" || keyslot.Slot(fenceKey) == first) {
		return nil, nil
	}
	all = append(append([]string(nil), keys...), fenceKey)
	if fenceKey == "" {
		all = all[:len(keys)]
	}
	slots = make([]int, len(all))
	for i, k := range all {
		slots[i] = keyslot.Slot(k)
	}
	return all, slots
}

// SlotList names every key with its slot, with the advice of a common hash
// tag, as the text that follows the error's name.
func SlotList(keys []string, slots []int) string {
	var b strings.Builder
	b.WriteString(":")
	for i, k := range keys {
		fmt.Fprintf(&b, " %q=%d", k, slots[i])
	}
	b.WriteString(` (put a common hash tag in every key, like "{job}:lock" and "{job}:fence")`)
	return b.String()
}
