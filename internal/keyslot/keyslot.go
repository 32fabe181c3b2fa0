// Package keyslot computes where Redis Cluster places a key: CRC16 of the
// key or of its hash tag, modulo 16384. It is the one implementation shared
// by the library and its test harness (internal/redistest). Every function
// is pure and safe for concurrent use.
package keyslot

import "strings"

// Count is the number of hash slots of a Redis Cluster: slots are 0 to
// Count-1.
const Count = 16384

// Slot returns the hash slot of key: [CRC16] of the key's hash tag (see
// [Tag]), or of the whole key when it has none, modulo [Count].
func Slot(key string) int {
	if tag, ok := Tag(key); ok {
		key = tag
	}
	return int(CRC16(key) % Count)
}

// Tag returns the hash tag of key, the text between its first "{" and the
// next "}", and true; or "" and false when key has no "{", no "}" after
// it, or nothing between them ("{}"), in which case Redis hashes the whole
// key. A "{" inside the tag is part of it: the tag of "{{a}}" is "{a".
func Tag(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}

// HasTag reports whether Redis hashes key by a hash tag rather than whole:
// the second result of [Tag].
func HasTag(key string) bool {
	_, ok := Tag(key)
	return ok
}

// CRC16 returns CRC-16/XMODEM of s (polynomial 0x1021, initial value 0, no
// reflection, no final XOR), the checksum Redis Cluster uses for key slots.
func CRC16(s string) uint16 {
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
