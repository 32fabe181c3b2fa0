package semaphore

import (
	"fmt"
	"strings"
	"time"
)

// CheckKey returns what is wrong with key as a semaphore's key, permits
// being its companion hash ("" when it has none, see [PermitsKey]), as the
// text that follows the error's name, or "" when nothing is.
func CheckKey(key, permits string) string {
	switch {
	case key == "":
		return "the semaphore key is empty"
	case permits == "":
		return fmt.Sprintf("semaphore key %q has a \"}\" but no hash tag: give it one, like \"{%s}\"",
			key, strings.ReplaceAll(key, "}", ""))
	}
	return ""
}

// CheckToken returns what is wrong with token as a permit's explicit
// token, as the text that follows the error's name, or "" when nothing is.
func CheckToken(token string) string {
	if strings.HasPrefix(token, ReservationMark) {
		return fmt.Sprintf("a permit's token may not start with %q, which marks a slot reserved for a woken waiter",
			ReservationMark)
	}
	return ""
}

// Holders is [ParseHolders] into H, the root's PermitInfo, whose fields
// are those of [Holder].
func Holders[H ~struct {
	Token      string
	Metadata   string
	FenceToken int64
	TTL        time.Duration
}](reply any) ([]H, bool) {
	hs, ok := ParseHolders(reply)
	if !ok {
		return nil, false
	}
	out := make([]H, len(hs))
	for i, x := range hs {
		out[i] = H(x)
	}
	return out, true
}
