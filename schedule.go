package redislock

import (
	"context"
	"fmt"
	"time"
)

// SlotKey returns the key of the slot of period that t falls in, for the
// job named job, and the slot's end: for a job that must run once per
// scheduled time, however far apart the replicas that fire it are (see
// [Client.ObtainSlot]). Slots are the multiples of period since the zero
// Time, as [time.Time.Truncate] counts them, so that one that divides a
// day starts at UTC midnight; the key is job, a colon and the slot's
// start in UTC ("report:2026-12-04T02:00:00.000Z"), the same in every
// process whose t falls in that slot. Give job a hash tag to keep it with
// its fence key on a Cluster ("{report}"). A period below one millisecond
// gives the key of the millisecond.
func SlotKey(job string, period time.Duration, t time.Time) (key string, end time.Time) {
	period = max(period, time.Millisecond)
	start := t.Truncate(period)
	return job + ":" + start.UTC().Format("2006-01-02T15:04:05.000Z"), start.Add(period)
}

// ObtainSlot obtains the lock of job for the slot of period that now falls
// in ([SlotKey]) and keeps its key, whenever it is released, until the
// slot's end at least (in fact until one period after it): another
// process that fires the same job for the same slot, later by up to the
// rest of the slot (a clock or a scheduler behind), finds it taken, and
// one firing for the next slot takes a key of its own. The lock's TTL is
// period; a job that runs longer keeps it with [Lock.KeepAlive]. Of opt,
// everything is used as by [Client.Obtain], and opt.MinHold, when it
// reaches further, extends the hold; a wait (opt.RetryStrategy) ends at
// the slot's end at the latest, by this process's clock (its error
// matches ErrNotObtained and [context.DeadlineExceeded]), and never takes
// the key of a slot whose job has run. Errors are those of Obtain, and
// [ErrInvalidOption] for a period below one millisecond, before anything
// is sent.
func (c *Client) ObtainSlot(ctx context.Context, job string, period time.Duration, opt *Options) (*Lock, error) {
	if period < time.Millisecond {
		return nil, fmt.Errorf("%w: slot period %v is below 1ms", ErrInvalidOption, period)
	}
	now := time.Now()
	key, end := SlotKey(job, period, now)
	o := Options{}
	if opt != nil {
		o = *opt
	}
	// The key outlives the slot by a period: an attempt of a wait that
	// began before the slot's end can reach Redis after it (a loaded
	// machine, a slow network), and one of a process whose clock is
	// behind ends later still; a key freed at the slot's end would let
	// either take it and run the slot's job a second time.
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
