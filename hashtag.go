package redislock

// HashTag names the keys of one lock so that they share a Redis Cluster
// hash slot: every key built from it starts with the tag in braces, and
// Redis Cluster (like go-redis's Ring) places a key by the text between its
// first "{" and the next "}". Use it for the keys of a multi-key lock and
// its fence key:
//
//	job := redislock.HashTag("invoice:42")
//	lock, err := locker.ObtainMulti(ctx, job.Keys("ledger", "pdf"), ttl,
//		&redislock.Options{FenceKey: job.Key("fence")})
//
// Any tag works except the empty one and one that starts with "}": Redis
// hashes a key starting with "{}" whole, so such keys are spread over slots
// and a cluster client gets a [*CrossSlotError]. A HashTag is a string; it
// is safe for concurrent use.
type HashTag string

// Key returns "{tag}:name".
func (h HashTag) Key(name string) string {
	return "{" + string(h) + "}:" + name
}

// Keys returns h.Key(name) for each name, in order, in a new slice.
func (h HashTag) Keys(names ...string) []string {
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = h.Key(name)
	}
	return keys
}
