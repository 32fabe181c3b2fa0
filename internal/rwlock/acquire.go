package rwlock

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
)

// Check returns what is wrong with the RWMutex called name, whose keys
// are keys, or with fenceKey as its fence key (it is one of them), as the
// text that follows the error's name, or "" when nothing is.
func Check(name string, keys []string, fenceKey string) string {
	if name == "" {
		return "empty RWMutex name"
	}
	if fenceKey != "" && slices.Contains(keys, fenceKey) {
		return fmt.Sprintf("fence key %q is a key of the RWMutex", fenceKey)
	}
	return ""
}

// Registration is the registration argument of the RLock and Lock
// scripts: a waiter that retries, polling too, registers, renewed by each
// attempt; one that makes one attempt does not (0).
func Registration(retries bool) any {
	if retries {
		return handoff.RegistrationArg
	}
	return int64(0)
}

// Withdraw takes back the registration of the waiter token after it gave
// up, with the withdraw script s on the RWMutex's keys, and lets in whoever
// it held up. Best effort, bounded by a second even when ctx has ended: on
// failure the registration expires by itself.
func Withdraw(ctx context.Context, s handoff.Script, client redis.Scripter, keys []string, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = s.Run(ctx, client, keys, token).Err()
}

// Explain reads the refusal in err, an error of the RLock or Lock script
// of token on the RWMutex called name, with the text that follows the
// error's name ("" when err is no refusal).
func Explain(err error, token, name string) (Refusal, string) {
	switch r := Refused(err); r {
	case Upgrade:
		return r, fmt.Sprintf("token %q has a read hold of %q", token, name)
	case HeldByCaller:
		return r, fmt.Sprintf("token %q holds the write lock of %q (downgrade it instead)", token, name)
	}
	return NotRefused, ""
}
