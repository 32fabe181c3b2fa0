// Package redislockotel records the locks of a [redislock.Client], and its
// other primitives, as OpenTelemetry metrics and traces, through
// [redislock.Hook]s: call [InstrumentMetrics] and [InstrumentTracing]
// once, after [redislock.New] and before the Client is used.
//
// Metrics, in seconds, under the redislock. namespace (see
// docs/observability.md in the redislock repository for what each answers):
//
//	redislock.acquire.duration  histogram, s   obtain calls: redislock.outcome, redislock.wait
//	redislock.hold.duration     histogram, s   from obtain to release or loss: redislock.end
//	redislock.lost              counter        handles a keep-alive lost: redislock.reason
//	redislock.held              up-down        handles obtained and not yet released or lost (observed at collection)
//	redislock.waiting           up-down        obtain calls in progress (observed at collection)
//
// Every point also has redislock.kind, the primitive ("lock", "semaphore"
// for permits, "read" and "write" for an RWMutex's holds, "election" for
// campaigns and leaderships: see [redislock.Hook] for what each reports),
// the attributes of [WithAttributes], and redislock.name when
// [WithKeyName] maps the handle's first key (a semaphore's key, an RWMutex's
// or an election's name) to one. Keys are never attributes by themselves:
// there are as many as there are locked things.
//
// Spans, children of the span in the caller's context, one per obtain
// call, release and Refresh call, named for the primitive and the
// operation: "redislock.obtain", "redislock.release", "redislock.refresh"
// for locks; "redislock.semaphore.acquire", ".release", ".refresh";
// "redislock.rwmutex.rlock", ".runlock", ".lock", ".unlock", ".refresh";
// "redislock.election.campaign", ".resign". An obtain span has an event
// per attempt that did not obtain (the one that did is the span's end).
// A keep-alive's refreshes have no caller's context and are not traced.
// The attributes are set once, when the span ends.
package redislockotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redislock/redislock"
)

// instrumentationName names the meter and the tracer.
const instrumentationName = "github.com/redislock/redislock/extra/redislockotel"

// Option applies to both [InstrumentMetrics] and [InstrumentTracing].
type Option interface {
	MetricsOption
	TracingOption
}

// MetricsOption configures [InstrumentMetrics].
type MetricsOption interface{ applyMetrics(*config) }

// TracingOption configures [InstrumentTracing].
type TracingOption interface{ applyTracing(*config) }

type config struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	attrs   []attribute.KeyValue
	keyName func(key string) string
}

func newConfig() *config {
	return &config{mp: otel.GetMeterProvider(), tp: otel.GetTracerProvider()}
}

// option applies to metrics and tracing alike.
type option func(*config)

func (o option) applyMetrics(c *config) { o(c) }
func (o option) applyTracing(c *config) { o(c) }

type metricsOption func(*config)

func (o metricsOption) applyMetrics(c *config) { o(c) }

type tracingOption func(*config)

func (o tracingOption) applyTracing(c *config) { o(c) }

// WithMeterProvider sets the meter provider of the metrics.
// Default: the global one, otel.GetMeterProvider().
func WithMeterProvider(mp metric.MeterProvider) MetricsOption {
	return metricsOption(func(c *config) { c.mp = mp })
}

// WithTracerProvider sets the tracer provider of the spans.
// Default: the global one, otel.GetTracerProvider().
func WithTracerProvider(tp trace.TracerProvider) TracingOption {
	return tracingOption(func(c *config) { c.tp = tp })
}

// WithAttributes adds attrs to every metric point and span (a service's
// role, a Redis deployment's name).
// Default: none.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return option(func(c *config) { c.attrs = append(c.attrs, attrs...) })
}

// WithKeyName gives each point and span the attribute redislock.name,
// name(first key of the lock; the key or name of the other primitives),
// unless name returns "". name must return
// few distinct values (a job type, not a job id): each is a time series.
// It is called on the goroutines of the lock's calls and must be safe for
// concurrent use.
// Default: no name, every lock counted together.
func WithKeyName(name func(key string) string) Option {
	return option(func(c *config) { c.keyName = name })
}

// Attribute keys of the metrics and spans.
const (
	attrKind       = attribute.Key("redislock.kind")
	attrName       = attribute.Key("redislock.name")
	attrOutcome    = attribute.Key("redislock.outcome")
	attrWait       = attribute.Key("redislock.wait")
	attrEnd        = attribute.Key("redislock.end")
	attrReason     = attribute.Key("redislock.reason")
	attrAttempt    = attribute.Key("redislock.attempt")
	attrAttempts   = attribute.Key("redislock.attempts")
	attrBlocked    = attribute.Key("redislock.blocked")
	attrHandedOver = attribute.Key("redislock.handed_over")
	attrTTL        = attribute.Key("redislock.ttl")
	attrHeld       = attribute.Key("redislock.held")
	attrKeys       = attribute.Key("redislock.keys")
)

// name returns the low-cardinality name of a handle with keys, or "".
func (c *config) name(keys []string) string {
	if c.keyName == nil || len(keys) == 0 {
		return ""
	}
	return c.keyName(keys[0])
}

// baseAttrs returns the attributes of every point and span of a handle of
// kind called name: those of WithAttributes, the kind, and the name when
// it is not empty.
func (c *config) baseAttrs(kind redislock.Kind, name string) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, len(c.attrs)+2)
	attrs = append(attrs, c.attrs...)
	attrs = append(attrs, attrKind.String(kind.String()))
	if name != "" {
		attrs = append(attrs, attrName.String(name))
	}
	return attrs
}

// seriesKey names the handles of one kind and name.
type seriesKey struct {
	kind redislock.Kind
	name string
}
