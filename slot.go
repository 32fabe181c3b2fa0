package redislock

import "strings"

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// HashSlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of the
// key's hash tag, or of the whole key when it has none, modulo 16384. The
// hash tag is the text between the first "{" and the next "}", when that is
// not empty. Keys with the same tag share a slot, so "{job}:lock" and
// "{job}:fence" can be locked and fenced together on a Cluster.
func HashSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % slotCount)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

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
