package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/script"
)

// errResigned is why a leadership that resigned cannot proclaim.
var errResigned = errors.New("it resigned")

// CannotProclaim returns why a leadership can no longer proclaim, or nil: it
// resigned; its keep-alive ended with err; or its lease, valid until
// validUntil, has run out (an error matching lost).
func CannotProclaim(resigned bool, err error, validUntil time.Time, lost error) error {
	switch {
	case resigned:
		return errResigned
	case err != nil:
		return err
	case !time.Now().Before(validUntil):
		return fmt.Errorf("%w: its lease ran out", lost)
	}
	return nil
}

// Proclaim runs the proclaim script s through client: the value of the
// leader whose token holds the election key name becomes value, and
// channel's observers are told. held is false when token no longer holds
// name (nothing changed).
func Proclaim(ctx context.Context, s *script.Script, client redis.Scripter, name, channel string,
	token any, value string, sharded bool) (held bool, err error) {
	reply, err := s.Run(ctx, client, []string{name, channel}, token, value, PublishFlag(sharded)).Int64Slice()
	return err == nil && len(reply) > 0 && reply[0] == 1, err
}

// Resigned runs the resigned script s through client: channel's observers
// are told that the leadership of term ended. Best effort: its error is
// ignored (observers re-read within a second).
func Resigned(ctx context.Context, s *script.Script, client redis.Scripter, channel string, term int64, sharded bool) {
	_ = s.Run(ctx, client, []string{channel}, strconv.FormatInt(term, 10), PublishFlag(sharded)).Err()
}

// CheckName returns what is wrong with name as an election's name, as the
// text that follows the error's name, or "" when nothing is (see [Names]).
func CheckName(name string) string {
	if name == "" {
		return "empty election name"
	}
	if _, _, ok := Names(name); !ok {
		return fmt.Sprintf("election name %q contains \"}\" without a hash tag", name)
	}
	return ""
}

// Detach returns ctx while it has not ended; once it has, a context with
// its values but without its cancellation, bounded by timeout.
func Detach(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if ctx.Err() == nil {
		return ctx, func() {}
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}
