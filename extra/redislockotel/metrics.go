package redislockotel

import (
	"context"
	"errors"
	"slices"
	"sync"

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
// package documentation, with the meter of [WithMeterProvider]. Call it
// once per Client, before the Client is used (see
// [redislock.Client.AddHook]); each call adds another hook. It returns the
// meter's error when an instrument cannot be created, and adds nothing
// then.
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
	held    metric.Int64UpDownCounter
	waiting metric.Int64UpDownCounter

	sets sync.Map // setKey → metric.MeasurementOption, made once per combination
}

// setKey names one combination of attributes.
type setKey struct {
	kind   redislock.Kind
	name   string
	k1, v1 string
	k2, v2 string
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
		metric.WithDescription("Time locks were held: from the obtain to the release or the loss."),
		metric.WithExplicitBucketBoundaries(holdBuckets...))
	err = errors.Join(err, e)
	h.lost, e = m.Int64Counter("redislock.lost", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks that a keep-alive lost, by reason."))
	err = errors.Join(err, e)
	h.held, e = m.Int64UpDownCounter("redislock.held", metric.WithUnit("{lock}"),
		metric.WithDescription("Locks obtained and not yet released or lost."))
	err = errors.Join(err, e)
	h.waiting, e = m.Int64UpDownCounter("redislock.waiting", metric.WithUnit("{call}"),
		metric.WithDescription("Obtain calls in progress."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// set returns the measurement option of the attributes of every point
// (those of WithAttributes, the kind, the name) plus k1=v1 and k2=v2 when
// they are not empty.
func (h *metricsHook) set(kind redislock.Kind, keys []string, k1 attribute.Key, v1 string, k2 attribute.Key, v2 string) metric.MeasurementOption {
	key := setKey{kind: kind, name: h.cfg.name(keys), k1: string(k1), v1: v1, k2: string(k2), v2: v2}
	if o, ok := h.sets.Load(key); ok {
		return o.(metric.MeasurementOption)
	}
	attrs := append(slices.Clip(h.cfg.attrs), attrKind.String(kind.String()))
	if key.name != "" {
		attrs = append(attrs, attrName.String(key.name))
	}
	if k1 != "" {
		attrs = append(attrs, k1.String(v1))
	}
	if k2 != "" {
		attrs = append(attrs, k2.String(v2))
	}
	o, _ := h.sets.LoadOrStore(key, metric.WithAttributeSet(attribute.NewSet(attrs...)))
	return o.(metric.MeasurementOption)
}

func (h *metricsHook) ObtainStart(ctx context.Context, e redislock.ObtainEvent) context.Context {
	h.waiting.Add(ctx, 1, h.set(e.Kind, e.Keys, "", "", "", ""))
	return ctx
}

func (h *metricsHook) ObtainDone(ctx context.Context, e redislock.ObtainEvent) {
	base := h.set(e.Kind, e.Keys, "", "", "", "")
	h.waiting.Add(ctx, -1, base)
	h.acquire.Record(ctx, e.Duration.Seconds(), h.set(e.Kind, e.Keys, attrOutcome, e.Outcome.String(), attrWait, e.Wait.String()))
	if e.Outcome == redislock.OutcomeObtained {
		h.held.Add(ctx, 1, base)
	}
}

func (h *metricsHook) ReleaseDone(ctx context.Context, e redislock.ReleaseEvent) {
	if !e.EndsHold {
		return
	}
	h.held.Add(ctx, -1, h.set(e.Kind, e.Keys, "", "", "", ""))
	end := "released"
	switch {
	case e.Err != nil:
		end = releaseEnd(e.Err)
	case e.HandedOver > 0:
		end = "handed_over"
	}
	h.hold.Record(ctx, e.Held.Seconds(), h.set(e.Kind, e.Keys, attrEnd, end, "", ""))
}

func (h *metricsHook) Lost(e redislock.LostEvent) {
	ctx := context.Background()
	h.lost.Add(ctx, 1, h.set(e.Kind, e.Keys, attrReason, e.Reason.String(), "", ""))
	if e.EndsHold {
		h.held.Add(ctx, -1, h.set(e.Kind, e.Keys, "", "", "", ""))
		h.hold.Record(ctx, e.Held.Seconds(), h.set(e.Kind, e.Keys, attrEnd, "lost", "", ""))
	}
}

// releaseEnd is the redislock.end of a hold whose Release failed with err:
// "not_held" when the lock had expired or been taken, "error" when Redis
// failed (the keys then expire by their TTL).
func releaseEnd(err error) string {
	if errors.Is(err, redislock.ErrLockNotHeld) {
		return "not_held"
	}
	return "error"
}
