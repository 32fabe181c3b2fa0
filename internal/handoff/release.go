package handoff

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failed is the error of a wait that ended with err (not nil), out being
// what it obtained, in the root's words: notObtained, wrapping the
// context's error when the wait ended ([EndedError]); notObtained alone
// when it gave up; unexpected, naming keys, for a reply the waiting script
// never gives; any other error as it is. A lock obtained by a block that
// outlasted the context (the caller has gone) is given back with release,
// under a context of its own bounded by timeout.
func Failed(ctx context.Context, out Outcome, err error, keys []string, notObtained, unexpected error,
	timeout time.Duration, release func(context.Context)) error {
	var ended *EndedError
	switch {
	case errors.As(err, &ended):
		if out.Obtained {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			defer cancel()
			release(rctx)
		}
		return fmt.Errorf("%w: %w", notObtained, ended.Err)
	case errors.Is(err, ErrGaveUp):
		return notObtained
	case errors.Is(err, ErrUnexpectedReply):
		return fmt.Errorf("%w: wait of %q: %w", unexpected, keys, err)
	}
	return err
}

// DeniedByACL reports whether err is the server refusing a key or a
// command to the user: NOPERM, or the error a script gets for a command
// it may not call (Redis 7: "… can't run this command …", Valkey 8: "… has
// no permissions to run …").
func DeniedByACL(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't run this command") ||
		strings.Contains(msg, "no permissions")
}

// Withdraw takes back the registration id that a release of key made for
// a client's next wait, which went to another key instead (see
// [Hint.Stale]): otherwise a handover of key would reserve it for its
// claim window with nobody to take it. leave is the leave script. Best
// effort: the registration lapses a second after the release anyway.
func Withdraw(ctx context.Context, leave Script, client redis.Scripter, key, id string) {
	keys, ok := Companions([]string{key})
	if !ok {
		return
	}
	_ = leave.Run(ctx, client, keys, id).Err()
}

// ReleaseKeys returns the keys of a release that hands the lock keys over
// (release.lua's layout, [Companions]): companions when the wait named
// them, else worked out from keys; ok is false when keys cannot have
// companions in their slot (the caller deletes instead).
func ReleaseKeys(companions, keys []string) (_ []string, ok bool) {
	if companions != nil {
		return companions, true
	}
	return Companions(keys)
}
