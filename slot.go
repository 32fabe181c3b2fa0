package redislock

import (
	"github.com/redislock/redislock/internal/check"
	"github.com/redislock/redislock/internal/keyslot"
)

// HashSlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key's hash tag, or of the whole key when it has none, modulo 16384. The
// hash tag is the text between the first "{" and the next "}", when that is
// not empty. Keys with the same tag share a slot, so "{job}:lock" and
// "{job}:fence" can be locked and fenced together on a Cluster.
func HashSlot(key string) int { return keyslot.Slot(key) }

// checkSlots returns a *CrossSlotError unless every key hashes to one slot.
// fenceKey, when not empty, is checked with the lock keys.
func checkSlots(keys []string, fenceKey string) error {
	if all, slots := check.Slots(keys, fenceKey); all != nil {
		return &CrossSlotError{Keys: all, Slots: slots}
	}
	return nil
}
