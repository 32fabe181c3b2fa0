package lease

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Config is a keep-alive's settings. A zero field means its default. The
// keep-alive copies it: one value may be shared by any number of them.
type Config struct {
	// TTL is the TTL each refresh sets; Redis counts whole milliseconds, so
	// it is truncated to them. It must be 1 ms or more.
	TTL time.Duration

	// Interval is the time from the sending of one successful refresh to
	// the sending of the next, less a random jitter of up to a tenth of it.
	// It must be shorter than TTL less the margin of a lease of TTL.
	// Default: TTL/3.
	Interval time.Duration

	// Margin is taken off the end of each lease to get ValidUntil.
	// Default: [DefaultMargin] of each lease's own TTL.
	Margin time.Duration

	// MaxHold ends the keep-alive, with [MaxHold], that long after it
	// started. Default: no limit.
	MaxHold time.Duration

	// Transient reports whether a refresh error may go away by itself, so
	// that the refresh is retried, after short backoffs, while the lease
	// lasts. The keep-alive's own context errors and [ErrNotHeld] are never
	// passed to it. Default: no error is transient.
	Transient func(err error) bool

	// Ended returns the error that [KeepAlive.Err] reports, and the cause of
	// the contexts of [KeepAlive.Context], for the way the keep-alive ended.
	// It is called once, by the goroutine that ends the keep-alive, with no
	// lock held, and must not return nil. Default: the End itself.
	Ended func(End) error

	// After, when set, is called once the keep-alive has ended, with its
	// End and Err: after the contexts of [KeepAlive.Context] were
	// cancelled and Done was closed, so that nothing it does (the hooks
	// of the root package) can delay or undo the loss signal. It runs on
	// the goroutine that ended the keep-alive; a panic in it is
	// recovered and dropped.
	After func(End, error)

	// Jitter returns a random duration in [0, max) (0 when max <= 0), taken
	// off each interval. Default: uniform, from math/rand/v2. Tests set it.
	Jitter func(max time.Duration) time.Duration
}

// ConfigError is returned by [Lease.KeepAlive] for a [Config] that cannot
// work.
type ConfigError struct {
	Problem string // what is wrong, in the caller's terms (field names of Config)
}

// Error returns the problem.
func (e *ConfigError) Error() string { return "lease: invalid keep-alive config: " + e.Problem }

// DefaultMargin is the margin of a lease of ttl when none is set: ttl/50 +
// 2 ms. The 2% covers the two clocks running at different rates (forty
// times the 500 ppm that NTP ever slews a clock); the 2 ms cover Redis
// keeping expiry times in whole milliseconds (up to 1 ms early) and a local
// timer firing a little late. No margin covers a clock that jumps nor a
// process paused while its lease runs out.
func DefaultMargin(ttl time.Duration) time.Duration {
	return ttl/50 + 2*time.Millisecond
}

// Check returns the [*ConfigError] that [Lease.KeepAlive] would return
// for c, or nil: whether a keep-alive of c can work.
func (c Config) Check() error {
	_, err := c.Resolve()
	return err
}

// Resolve applies the defaults to c (Margin stays 0 when it was: each
// lease then gets its own) and checks that the result can work: it
// returns the [*ConfigError] of [Lease.KeepAlive] otherwise.
func (c Config) Resolve() (Config, error) {
	c.TTL = whole(c.TTL)
	if c.TTL < time.Millisecond {
		return c, &ConfigError{Problem: fmt.Sprintf("TTL %v is below 1ms", c.TTL)}
	}
	if c.Interval < 0 || c.Margin < 0 || c.MaxHold < 0 {
		return c, &ConfigError{Problem: fmt.Sprintf("negative Interval %v, Margin %v or MaxHold %v", c.Interval, c.Margin, c.MaxHold)}
	}
	if c.Interval == 0 {
		c.Interval = c.TTL / 3
	}
	if c.Jitter == nil {
		c.Jitter = randomJitter
	}
	margin := c.margin()
	if margin >= c.TTL {
		return c, &ConfigError{Problem: fmt.Sprintf("Margin %v leaves nothing of the TTL %v", margin, c.TTL)}
	}
	if c.Interval >= c.TTL-margin {
		return c, &ConfigError{Problem: fmt.Sprintf("Interval %v is not shorter than TTL-Margin (%v): each lease would run out before its refresh", c.Interval, c.TTL-margin)}
	}
	return c, nil
}

// margin returns the margin of a lease of c.TTL, as the keep-alive's own
// refreshes set it.
func (c *Config) margin() time.Duration {
	if c.Margin > 0 {
		return c.Margin
	}
	return DefaultMargin(c.TTL)
}

// NextRefresh returns when to send the refresh after a successful one sent
// at sent, which made the keys valid until validUntil: an interval later,
// or earlier when that lease is shorter than one of ours (an obtain with a
// shorter TTL), so as to keep as much time for retries as a lease of ours
// would; less the jitter.
func (c *Config) NextRefresh(sent, validUntil time.Time) time.Time {
	due := sent.Add(c.Interval)
	if latest := validUntil.Add(-(c.TTL - c.margin() - c.Interval)); latest.Before(due) {
		due = latest
	}
	return due.Add(-c.Jitter(c.Interval / 10))
}

// Backoff returns the wait before retrying a refresh that failed failures
// times in a row: a 32nd of the interval (1 ms at least), doubling, at most
// a quarter of the interval.
func (c *Config) Backoff(failures int) time.Duration {
	ceiling := max(c.Interval/4, time.Millisecond)
	d := max(c.Interval/32, time.Millisecond)
	for i := 1; i < failures && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// randomJitter returns a random duration in [0, max), or 0.
func randomJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return rand.N(max) //nolint:gosec // spreads timers, not a secret
}
