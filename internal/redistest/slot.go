package redistest

import "github.com/redislock/redislock/internal/keyslot"

// Slot returns the Redis Cluster hash slot (0 to 16383) of key: CRC16 of the
// key, or of its hash tag, the part between the first "{" and the next "}"
// when that part is not empty.
func Slot(key string) int { return keyslot.Slot(key) }
