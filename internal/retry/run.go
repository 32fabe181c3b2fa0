package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Run runs attempt until it is done, the strategy gives up, or the context
// ends, as a [Loop] from [Begin] does, on the caller's goroutine. It
// returns the attempt's result when the attempt is done, and otherwise
// ended applied to the loop's error.
func Run(ctx context.Context, ttl time.Duration, strategy Strategy, transient func(error) bool,
	attempt func(context.Context) (bool, error), ended func(error) error) error {
	l := Begin(ctx, time.Now(), ttl, strategy, transient)
	defer l.Stop()
	for {
		done, err := attempt(l.Context())
		if done {
			return err
		}
		if !l.Again(err) {
			return ended(l.Err())
		}
	}
}

// Words returns the error of a call whose loop ended with err:
// notObtained (or the last transient error) when the strategy gave up;
// when the context ended, an error that matches both notObtained and the
// context's error; any other error as it is.
func Words(err, notObtained error) error {
	var ended *EndedError
	switch {
	case errors.As(err, &ended):
		return fmt.Errorf("%w: %w", notObtained, ended.Err)
	case errors.Is(err, ErrGaveUp):
		return notObtained
	}
	return err
}
