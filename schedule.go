package redislock

import (
	"context"
	"fmt"
	"time"
)

// SlotKey returns the key of the slot of period that t falls in, for the
// job named job, and the slot's end (see [Client.ObtainSlot]). Slots are
// the multiples of period since the zero Time, as [time.Time.Truncate]
// counts them, so that one that divides a day starts at UTC midnight; the
// key is job, a colon and the slot's start in UTC
// ("report:2026-12-04T02:00:00.000Z"), the same in every process whose t
// falls in that slot. Give job a hash tag to keep it with its fence key on
// a Cluster ("{report}"). A period below one millisecond gives the key of
// the millisecond.
func SlotKey(job string, period time.Duration, t time.Time) (key string, end time.Time) {
	period = max(period, time.Millisecond)
	start := t.Truncate(period)
	return job + ":" + start.UTC().Format("2006-01-02T15:04:05.000Z"), start.Add(period)
}

// ObtainSlot obtains the lock of job for the slot of period that now falls
// in ([SlotKey]), with a TTL of period, and keeps its key, whenever it is
// released, until one period after the slot's end (docs/scheduling.md,
// "Clocks"): another process that fires the job for the same slot, however
// late within it, finds it taken. Of opt, everything is used as by
// [Client.Obtain], and opt.MinHold, when it reaches further, extends the
// hold; a wait (opt.RetryStrategy) ends at the slot's end at the latest,
// by this process's clock (its error matches ErrNotObtained and
// [context.DeadlineExceeded]), and never takes the key of a slot whose job
// has run. Errors are those of Obtain, and [ErrInvalidOption] for a period
// below one millisecond, before anything is sent.
func (c *Client) ObtainSlot(ctx context.Context, job string, period time.Duration, opt *Options) (*Lock, error) {
	if period < time.Millisecond {
		return nil, fmt.Errorf("%w: slot period %v is below 1ms", ErrInvalidOption, period)
	}
	now := time.Now()
	key, end := SlotKey(job, period, now)
	o := opt.or()
	// The key outlives the slot by a period (docs/scheduling.md, Clocks).
	if o.MinHold >= 0 { // a negative one is Obtain's to refuse
		o.MinHold = max(o.MinHold, end.Add(period).Sub(now))
	}
	if ctx != nil && o.RetryStrategy != nil { // a nil ctx is Obtain's to refuse
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, end)
		defer cancel()
	}
	return c.Obtain(ctx, key, period, &o)
}
