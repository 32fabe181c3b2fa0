// Package redislockprom records the locks of [redislock.Client]s as
// Prometheus metrics, for programs that use client_golang directly (with
// OpenTelemetry, use extra/redislockotel instead). A [Collector] is both a
// [prometheus.Collector] and a [redislock.Hook]:
//
//	c := redislockprom.NewCollector(nil)
//	prometheus.MustRegister(c)
//	locker := redislock.New(rdb)
//	locker.AddHook(c)
//
// The metrics, of every primitive (see docs/observability.md in the
// redislock repository for what each answers):
//
//	redislock_acquire_duration_seconds  histogram  obtain calls, by outcome and wait
//	redislock_hold_duration_seconds     histogram  from obtain to release or loss, by end
//	redislock_lost_total                counter    locks a keep-alive lost, by reason
//	redislock_held                      gauge      locks obtained and not yet released or lost
//	redislock_waiting                   gauge      obtain calls in progress
//
// Every series has the label kind, the primitive it counts ("lock",
// "semaphore" for permits, "read" and "write" for the holds of an
// RWMutex, "election" for leaderships and campaigns: see
// [redislock.Hook]), and name when [Options.KeyName] is set. Keys are
// never labels by themselves.
package redislockprom

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redislock/redislock"
)

// Options tunes [NewCollector]. A nil *Options means all defaults.
type Options struct {
	// Namespace prefixes every metric name.
	// Default: "redislock".
	Namespace string

	// ConstLabels are added to every series (a service's role, a Redis
	// deployment's name).
	// Default: none.
	ConstLabels prometheus.Labels

	// KeyName, when set, adds the label name: KeyName(first key of the
	// lock; the key or name of a semaphore, RWMutex or election). It must return few distinct values (a job type, not a job
	// id): each is a set of series. It is called on the goroutines of the
	// locks' calls and must be safe for concurrent use.
	// Default: nil, no name label.
	KeyName func(key string) string

	// AcquireBuckets and HoldBuckets are the histograms' upper bounds, in
	// seconds.
	// Default: 0.5 ms to 60 s for acquisitions, 1 ms to 1 h for holds.
	AcquireBuckets, HoldBuckets []float64
}

// Collector holds the metrics of every Client it was added to as a hook.
// Register it once; add it to any number of Clients. It is safe for
// concurrent use.
type Collector struct {
	redislock.NopHook
	keyName func(string) string

	acquire *prometheus.HistogramVec
	hold    *prometheus.HistogramVec
	lost    *prometheus.CounterVec
	held    *prometheus.GaugeVec
	waiting *prometheus.GaugeVec
}

// NewCollector returns a Collector with no series observed yet, except
// that, without a KeyName, the lost counters of every reason and the held
// and waiting gauges of locks (kind "lock") start at 0 (so that rate() and
// alerts see them from the start); the other kinds' series appear with
// their first event.
func NewCollector(opt *Options) *Collector {
	var o Options
	if opt != nil {
		o = *opt
	}
	if o.Namespace == "" {
		o.Namespace = "redislock"
	}
	if o.AcquireBuckets == nil {
		o.AcquireBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	}
	if o.HoldBuckets == nil {
		o.HoldBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600}
	}
	base := []string{"kind"}
	if o.KeyName != nil {
		base = append(base, "name")
	}
	labels := func(extra ...string) []string { return append(append([]string(nil), base...), extra...) }
	c := &Collector{
		keyName: o.KeyName,
		acquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Name: "acquire_duration_seconds", ConstLabels: o.ConstLabels, Buckets: o.AcquireBuckets,
			Help: "Duration of obtain calls, from the first attempt to the result, by outcome (obtained, not_obtained, error) and wait (none, poll, event).",
		}, labels("outcome", "wait")),
		hold: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: o.Namespace, Name: "hold_duration_seconds", ConstLabels: o.ConstLabels, Buckets: o.HoldBuckets,
			Help: "Time locks (and permits, holds, leaderships: see kind) were held, from the obtain to the release or loss, by end (released, handed_over, not_held, error, lost).",
		}, labels("end")),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: o.Namespace, Name: "lost_total", ConstLabels: o.ConstLabels,
			Help: "Locks (and permits, holds, leaderships: see kind) that a keep-alive lost, by reason (gone, taken, expired, max_hold, error).",
		}, labels("reason")),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: o.Namespace, Name: "held", ConstLabels: o.ConstLabels,
			Help: "Locks (and permits, holds, leaderships: see kind) obtained and not yet released or lost.",
		}, base),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: o.Namespace, Name: "waiting", ConstLabels: o.ConstLabels,
			Help: "Obtain calls (and acquires, campaigns: see kind) in progress.",
		}, base),
	}
	if o.KeyName == nil {
		kind := redislock.KindLock.String()
		for _, r := range []redislock.LostReason{redislock.LostGone, redislock.LostTaken, redislock.LostExpired, redislock.LostMaxHold, redislock.LostError} {
			c.lost.WithLabelValues(kind, r.String())
		}
		c.held.WithLabelValues(kind)
		c.waiting.WithLabelValues(kind)
	}
	return c
}

// Describe sends the descriptors of the metrics.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	c.acquire.Describe(ch)
	c.hold.Describe(ch)
	c.lost.Describe(ch)
	c.held.Describe(ch)
	c.waiting.Describe(ch)
}

// Collect sends the current values of the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.acquire.Collect(ch)
	c.hold.Collect(ch)
	c.lost.Collect(ch)
	c.held.Collect(ch)
	c.waiting.Collect(ch)
}

// labels returns the label values of kind and the lock's name, then extra.
// With one or two extra values the slice stays on the stack.
func (c *Collector) labels(kind redislock.Kind, keys []string, extra ...string) []string {
	out := make([]string, 0, 4)
	out = append(out, kind.String())
	if c.keyName != nil {
		name := ""
		if len(keys) > 0 {
			name = c.keyName(keys[0])
		}
		out = append(out, name)
	}
	return append(out, extra...)
}

// ObtainStart counts the call as waiting.
func (c *Collector) ObtainStart(ctx context.Context, e redislock.ObtainEvent) context.Context {
	c.waiting.WithLabelValues(c.labels(e.Kind, e.Keys)...).Inc()
	return ctx
}

// ObtainDone records the call's duration and, when it obtained the lock,
// counts the lock as held.
func (c *Collector) ObtainDone(_ context.Context, e redislock.ObtainEvent) {
	base := c.labels(e.Kind, e.Keys)
	c.waiting.WithLabelValues(base...).Dec()
	c.acquire.WithLabelValues(append(base, e.Outcome.String(), e.Wait.String())...).Observe(e.Duration.Seconds())
	if e.Outcome == redislock.OutcomeObtained {
		c.held.WithLabelValues(base...).Inc()
	}
}

// ReleaseDone ends the lock's hold, unless a loss ended it first.
func (c *Collector) ReleaseDone(_ context.Context, e redislock.ReleaseEvent) {
	if !e.EndsHold {
		return
	}
	end := "released"
	switch {
	case errors.Is(e.Err, redislock.ErrLockNotHeld):
		end = "not_held"
	case e.Err != nil:
		end = "error"
	case e.HandedOver > 0:
		end = "handed_over"
	}
	c.endHold(e.Kind, e.Keys, end, e.Held.Seconds())
}

// Lost counts the loss, and ends the lock's hold.
func (c *Collector) Lost(e redislock.LostEvent) {
	c.lost.WithLabelValues(c.labels(e.Kind, e.Keys, e.Reason.String())...).Inc()
	if e.EndsHold {
		c.endHold(e.Kind, e.Keys, "lost", e.Held.Seconds())
	}
}

func (c *Collector) endHold(kind redislock.Kind, keys []string, end string, seconds float64) {
	base := c.labels(kind, keys)
	c.held.WithLabelValues(base...).Dec()
	c.hold.WithLabelValues(append(base, end)...).Observe(seconds)
}
