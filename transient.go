package redislock

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// transientReplies are the prefixes of Redis error replies that can go away
// by themselves: a server loading its data set or busy in a script, a
// cluster resharding or electing, a client that reached a replica during a
// failover.
var transientReplies = [...]string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY"}

// transient reports whether err may be worth another attempt: a network
// failure or one of transientReplies. Context errors, a closed client and
// every other error reply (a script error, NOPERM, WRONGTYPE) are final.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		for _, p := range transientReplies {
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
