package redislock

import (
	"errors"
	"slices"
	"testing"
)

// FuzzCheckKeysCluster checks the Cluster validation of a lock's keys: the
// plain rules (see FuzzObtainValidation) and then one hash slot for every
// key and the fence key, with a *CrossSlotError that names each key and its
// slot otherwise.
func FuzzCheckKeysCluster(f *testing.F) {
	f.Add("{job}:a", "{job}:b", "", uint8(2), "{job}:fence")
	f.Add("foo", "bar", "", uint8(2), "")
	f.Add("{job}:lock", "", "", uint8(1), "fence")
	f.Add("{}a", "{}b", "", uint8(2), "")
	f.Add("{a", "{a", "", uint8(2), "")
	f.Add("x{a}", "y{a}", "{a}z", uint8(3), "{a}")
	f.Fuzz(func(t *testing.T, k1, k2, k3 string, n uint8, fence string) {
		keys := []string{k1, k2, k3}[:n%4]
		err := checkKeys(keys, fence, true)
		plain := checkKeys(keys, fence, false)
		if plain != nil {
			if !errors.Is(plain, ErrInvalidKey) || err == nil || err.Error() != plain.Error() {
				t.Fatalf("keys %q fence %q: cluster %v, standalone %v: want the same ErrInvalidKey", keys, fence, err, plain)
			}
			return
		}
		all := slices.Clone(keys)
		if fence != "" {
			all = append(all, fence)
		}
		same := true
		for _, k := range all {
			same = same && HashSlot(k) == HashSlot(all[0])
		}
		if same {
			if err != nil {
				t.Fatalf("keys %q fence %q, all in slot %d: %v", keys, fence, HashSlot(all[0]), err)
			}
			return
		}
		var cross *CrossSlotError
		if !errors.As(err, &cross) || !errors.Is(err, ErrCrossSlot) {
			t.Fatalf("keys %q fence %q in different slots: got %v, want a *CrossSlotError", keys, fence, err)
		}
		if !slices.Equal(cross.Keys, all) || len(cross.Slots) != len(all) {
			t.Fatalf("CrossSlotError keys %q slots %v, want keys %q", cross.Keys, cross.Slots, all)
		}
		for i, k := range all {
			if cross.Slots[i] != HashSlot(k) {
				t.Fatalf("CrossSlotError slot of %q = %d, want %d", k, cross.Slots[i], HashSlot(k))
			}
		}
	})
}
