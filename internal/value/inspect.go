package value

import "time"

// Info is a lock key as inspect.lua reads it.
type Info struct {
	Held     bool // the key exists
	Foreign  bool // held, but its value is not in this package's format
	Token    string
	Fence    int64
	Metadata string
	Value    string // "" when the key is not a string
	TTL      time.Duration
}

// ParseInspect reads inspect.lua's reply: {} for a key that does not
// exist, {pttl} for one that is not a string, {pttl, value} for a string.
// ok is false for any other reply.
func ParseInspect(reply any) (info Info, ok bool) {
	r, ok := reply.([]any)
	if !ok || len(r) == 0 {
		return info, ok
	}
	ms, ok := r[0].(int64)
	if !ok || len(r) > 2 {
		return info, false
	}
	info.Held, info.TTL = true, time.Duration(ms)*time.Millisecond
	if len(r) == 1 {
		info.Foreign = true
		return info, true
	}
	if info.Value, ok = r[1].(string); !ok {
		return Info{}, false
	}
	info.Token, info.Fence, info.Metadata, ok = Parse(info.Value)
	info.Foreign = !ok
	return info, true
}
