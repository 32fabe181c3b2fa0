package script

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Transient reports whether err may be worth another attempt: a network
// failure, or an error reply that can go away by itself (a server loading
// its data set or busy in a script, a cluster resharding or electing, a
// client that reached a replica during a failover). Context errors, a closed client and
// every other error reply (a script error, NOPERM, WRONGTYPE) are final.
func Transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		for _, p := range [...]string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY"} {
			// Older servers wrap errors raised inside a script:
			// "ERR Error running script (…): @user_script:1: -READONLY …".
			if strings.HasPrefix(msg, p) || strings.Contains(msg, ": -"+p+" ") {
				return true
			}
		}
		return false
	}
	return true
}
