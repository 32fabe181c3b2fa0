package redislock

import (
	"context"
	"errors"
	"fmt"

	"github.com/redislock/redislock/internal/redisreply"
)

// typed returns err as this package's error when the server refused one
// of its scripts for a reason the caller can act on: a key that holds
// another kind of value (a [*WrongTypeError]), or a command the server
// does not have ([ErrServerTooOld], needs naming the version); any other
// error is returned as it is. See docs/errors.md.
func typed(ctx context.Context, client RedisClient, keys []string, needs string, err error) error {
	if err == nil || errors.Is(err, ErrWrongType) || errors.Is(err, ErrServerTooOld) {
		return err
	}
	switch r, key, got, want := redisreply.Read(ctx, client, keys, needs != "", err); r {
	case redisreply.WrongType:
		return &WrongTypeError{Key: key, Type: got, Want: want, Err: err}
	case redisreply.TooOld:
		return fmt.Errorf("%w: %s (%w)", ErrServerTooOld, needs, err)
	}
	return err
}
