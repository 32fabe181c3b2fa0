package election

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/keyslot"
	"github.com/redislock/redislock/internal/script"
)

// The timing of campaigns (docs/election.md).
const (
	// Abandon bounds the clean-up of a Campaign that failed (the delete of
	// the key its token may hold), so that a Redis that cannot be reached
	// does not hold the caller long after its context ended.
	Abandon = 250 * time.Millisecond
	// Round is how long one obtain of a Campaign whose context has no
	// deadline waits before it starts again (the lock's wait is bounded by
	// its TTL when the context has no deadline; a campaign is not).
	Round = time.Hour
)

// Names returns the term counter and the channel of the election called
// name, in its hash slot, named as the wait queues of WaitForRelease are
// (internal/handoff): a name without hash tag is put in braces, which
// keeps its slot, and marked, so that "job" and "{job}" do not share a
// counter. ok is false for a name that contains "}" without a hash tag.
func Names(name string) (termKey, channel string, ok bool) {
	base, mark := name, ""
	if !keyslot.HasTag(name) {
		if strings.IndexByte(name, '}') >= 0 {
			return "", "", false
		}
		base, mark = "{"+name+"}", ":untagged"
	}
	return base + ":redislock:term" + mark, base + ":redislock:leader" + mark, true
}

// PublishFlag is the argument of the election's publishing scripts: "1"
// for SPUBLISH (sharded, on a Redis Cluster), "0" for PUBLISH.
func PublishFlag(sharded bool) string {
	if sharded {
		return "1"
	}
	return "0"
}

// subscriber and shardedSubscriber are the parts of go-redis clients that
// observers use for notifications.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

type shardedSubscriber interface {
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Subscribe subscribes client to channel (SSUBSCRIBE when sharded), for
// [Watch]; nil when client cannot subscribe that way (then Watch reads
// only).
func Subscribe(ctx context.Context, client any, channel string, sharded bool) *redis.PubSub {
	if s, ok := client.(shardedSubscriber); ok && sharded {
		return s.SSubscribe(ctx, channel)
	} else if s, ok := client.(subscriber); ok && !sharded {
		return s.Subscribe(ctx, channel)
	}
	return nil
}

// CtxError is an error that matches both Base and Ctx, a context's error:
// a Campaign that ended with its context after a Redis error matches the
// root's ErrNotObtained and the context's error, as a lock's wait does.
type CtxError struct{ Base, Ctx error }

func (e *CtxError) Error() string   { return e.Base.Error() + ": " + e.Ctx.Error() }
func (e *CtxError) Unwrap() []error { return []error{e.Base, e.Ctx} }

// Attempt runs one round of a Campaign: obtain, whose context is ctx, or
// one that ends after Round when ctx has no deadline. again is true when
// the Campaign should go on with another round: not obtained within Round,
// or a transient error (after a pause of Retry). Otherwise err is nil
// (obtained) or, after a call of abandon, the error that ends the
// Campaign, matching notObtained and ctx.Err() when ctx has ended.
func Attempt(ctx context.Context, notObtained error, obtain func(context.Context) error,
	abandon func()) (again bool, err error) {
	_, bounded := ctx.Deadline()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if !bounded {
		wctx, cancel = context.WithTimeout(ctx, Round)
	}
	err = obtain(wctx)
	cancel()
	switch {
	case err == nil:
		return false, nil
	case ctx.Err() == nil && !bounded && errors.Is(err, notObtained):
		return true, nil
	case ctx.Err() == nil && script.Transient(err) && Sleep(ctx, Retry):
		return true, nil
	}
	abandon()
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = &CtxError{Base: notObtained, Ctx: ctx.Err()}
	}
	return false, err
}
