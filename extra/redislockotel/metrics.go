package redislockotel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redislock/redislock"
)

// Bucket boundaries, in seconds: an acquisition takes from a round trip
// (well under a millisecond on a LAN) to as long as a caller waits; a hold,
// from milliseconds to hours.
var (
	acquireBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	holdBuckets    = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600}
)

// InstrumentMetrics adds a hook to c that records the metrics listed in the
// package documentation, for every primitive, with the meter of
// [WithMeterProvider]. Call it once per Client, before the Client is used
// (see [redislock.Client.AddHook]); each call adds another hook. It
// returns the meter's error when an instrument cannot be created, and
// adds nothing then.
func InstrumentMetrics(c *redislock.Client, opts ...MetricsOption) error {
	cfg := newConfig()
	for _, o := range opts {
		o.applyMetrics(cfg)
	}
	h, err := newMetricsHook(cfg)
	if err != nil {
		return err
	}
	c.AddHook(h)
	return nil
}

// metricsHook records the metrics of one Client.
type metricsHook struct {
	redislock.NopHook
	cfg *config

	acquire metric.Float64Histogram
	hold    metric.Float64Histogram
	lost    metric.Int64Counter
	// held and waiting are observed at each collection (observe) from the
	// series' counts, which the hook keeps with atomic adds: far cheaper
	// per call than a synchronous instrument's Add.
	held    metric.Int64ObservableUpDownCounter
	waiting metric.Int64ObservableUpDownCounter

	byKind [8]atomic.Pointer[series] // without a key-name function, by kind
	named  sync.Map                  // seriesKey → *series, with one
}

// The values of redislock.end, in the order of series.hold.
var ends = [...]string{"released", "handed_over", "not_held", "error", "lost"}

const (
	endReleased = iota
	endHandedOver
	endNotHeld
	endError
	endLost
)

// series holds the measurement options of the handles of one kind and
// name, each attribute set made once: every recording picks one by index,
// and passes a slice made once too (a variadic argument made at each
// call would be an allocation).
type series struct {
	base    []metric.ObserveOption
	acquire [3][3][]metric.RecordOption // by outcome and wait, from 1
	hold    [len(ends)][]metric.RecordOption
	lost    [5][]metric.AddOption // by reason, from 1

	held, waiting atomic.Int64 // the handles held and the calls waiting, observed by metricsHook.observe
}

func newSeries(cfg *config, kind redislock.Kind, name string) *series {
	base := cfg.baseAttrs(kind, name)
	with := func(kvs ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], kvs...)...))
	}
	add := func(kvs ...attribute.KeyValue) []metric.AddOption { return []metric.AddOption{with(kvs...)} }
	record := func(kvs ...attribute.KeyValue) []metric.RecordOption { return []metric.RecordOption{with(kvs...)} }
	s := &series{base: []metric.ObserveOption{with()}}
	for o := range s.acquire {
		for w := range s.acquire[o] {
			s.acquire[o][w] = record(attrOutcome.String(redislock.Outcome(o+1).String()), attrWait.String(redislock.WaitMode(w+1).String()))
		}
	}
	for i, end := range ends {
		s.hold[i] = record(attrEnd.String(end))
	}
	for r := range s.lost {
		s.lost[r] = add(attrReason.String(redislock.LostReason(r + 1).String()))
	}
	return s
}

func newMetricsHook(cfg *config) (*metricsHook, error) {
	m := cfg.mp.Meter(instrumentationName)
	h := &metricsHook{cfg: cfg}
	var err, e error
	h.acquire, e = m.Float64Histogram("redislock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of obtain calls, from the first attempt to the result, whatever the outcome."),
		metric.WithExplicitBucketBoundaries(acquireBuckets...))
	err = errors.Join(err, e)
	h.hold, e = m.Float64Histogram("redislock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time handles were held: from the obtain to the release or the loss."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	err = errors.Join(err, e)
	h.lost, e = m.Int64Counter("redislock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Handles that a keep-alive lost, by reason."))
	err = errors.Join(err, e)
	h.held, e = m.Int64ObservableUpDownCounter("redislock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Handles obtained and not yet released or lost."))
	err = errors.Join(err, e)
	h.waiting, e = m.Int64ObservableUpDownCounter("redislock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Obtain calls in progress."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	if _, err := m.RegisterCallback(h.observe, h.held, h.waiting); err != nil {
		return nil, err
	}
	return h, nil
}

// observe reports the held and waiting counts of every series, at each
// collection.
func (h *metricsHook) observe(_ context.Context, o metric.Observer) error {
	each := func(s *series) {
		o.ObserveInt64(h.held, s.held.Load(), s.base...)
		o.ObserveInt64(h.waiting, s.waiting.Load(), s.base...)
	}
	for i := range h.byKind {
		if s := h.byKind[i].Load(); s != nil {
			each(s)
		}
	}
	h.named.Range(func(_, s any) bool {
		each(s.(*series))
		return true
	})
	return nil
}

// series returns the series of a handle of kind with keys.
func (h *metricsHook) series(kind redislock.Kind, keys []string) *series {
	if h.cfg.keyName == nil && int(kind) < len(h.byKind) {
		p := &h.byKind[kind]
		if s := p.Load(); s != nil {
			return s
		}
		p.CompareAndSwap(nil, newSeries(h.cfg, kind, ""))
		return p.Load()
	}
	key := seriesKey{kind: kind, name: h.cfg.name(keys)}
	if s, ok := h.named.Load(key); ok {
		return s.(*series)
	}
	s, _ := h.named.LoadOrStore(key, newSeries(h.cfg, kind, key.name))
	return s.(*series)
}

func (h *metricsHook) ObtainStart(ctx context.Context, e redislock.ObtainEvent) context.Context {
	h.series(e.Kind, e.Keys).waiting.Add(1)
	return ctx
}

func (h *metricsHook) ObtainDone(ctx context.Context, e redislock.ObtainEvent) {
	s := h.series(e.Kind, e.Keys)
	s.waiting.Add(-1)
	o, w := int(e.Outcome)-1, int(e.Wait)-1
	if o >= 0 && o < len(s.acquire) && w >= 0 && w < len(s.acquire[o]) {
		h.acquire.Record(ctx, e.Duration.Seconds(), s.acquire[o][w]...)
	}
	if e.Outcome == redislock.OutcomeObtained {
		s.held.Add(1)
	}
}

func (h *metricsHook) ReleaseDone(ctx context.Context, e redislock.ReleaseEvent) {
	if !e.EndsHold {
		return
	}
	s := h.series(e.Kind, e.Keys)
	s.held.Add(-1)
	end := endReleased
	switch {
	case errors.Is(e.Err, redislock.ErrLockNotHeld):
		end = endNotHeld
	case e.Err != nil:
		end = endError
	case e.HandedOver > 0:
		end = endHandedOver
	}
	h.hold.Record(ctx, e.Held.Seconds(), s.hold[end]...)
}

func (h *metricsHook) Lost(e redislock.LostEvent) {
	ctx := context.Background()
	s := h.series(e.Kind, e.Keys)
	if r := int(e.Reason) - 1; r >= 0 && r < len(s.lost) {
		h.lost.Add(ctx, 1, s.lost[r]...)
	}
	if e.EndsHold {
		s.held.Add(-1)
		h.hold.Record(ctx, e.Held.Seconds(), s.hold[endLost]...)
	}
}

// releaseEnd is the redislock.end of a hold whose Release failed with err:
// "not_held" when the handle had expired or been taken, "error" when Redis
// failed (the keys then expire by their TTL).
func releaseEnd(err error) string {
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return ends[endNotHeld]
	}
	return ends[endError]
}
