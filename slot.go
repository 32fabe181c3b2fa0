package redislock

import "github.com/redislock/redislock/internal/keyslot"

// HashSlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key's hash tag, or of the whole key when it has none, modulo 16384. The
// hash tag is the text between the first "{" and the next "}", when that is
// not empty. Keys with the same tag share a slot, so "{job}:lock" and
// "{job}:fence" can be locked and fenced together on a Cluster.
func HashSlot(key string) int { return keyslot.Slot(key) }

// checkSlots returns a *CrossSlotError unless every key hashes to one slot.
// fenceKey, when not empty, is checked with the lock keys.
func checkSlots(keys []string, fenceKey string) error {
	first := HashSlot(keys[0])
	same := true
	for _, k := range keys[1:] {
		if HashSlot(k) != first {
			same = false
			break
		}
	}
	if same && (fenceKey == "" || HashSlot(fenceKey) == first) {
		return nil
	}
	all := append(append([]string(nil), keys...), fenceKey)
	if fenceKey == "" {
		all = all[:len(keys)]
	}
	slots := make([]int, len(all))
	for i, k := range all {
		slots[i] = HashSlot(k)
	}
	return &CrossSlotError{Keys: all, Slots: slots}
}
