package redislockotel_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockotel"
	"github.com/redislock/redislock/internal/redistest"
)

// The SDK set-up of the benchmarks is the one a service runs, minus the
// network: a MeterProvider whose reader is never collected, and a
// TracerProvider whose sampler records every span (AlwaysSample, a ratio
// of 1; the default, ParentBased(AlwaysSample), does the same for these
// root-less calls) and hands each ended span to the default batch span
// processor, which exports to a no-op exporter. Every span is recorded,
// with its attributes and events, and goes through the processor's queue,
// as in production; only the export's own cost is left out, since it
// depends on the exporter and the collector, not on this module.
// otel-tracing-sync and otel-sync hand the same spans to the same exporter
// on End, through the simple span processor: no goroutine to wake per
// span. bare-spans and bare-spans-sync are the SDK's floor on each.

// providers returns the SDK providers of the benchmarks, shut down at the
// end of b.
func providers(b *testing.B) (mp *sdkmetric.MeterProvider, tp, syncTP *sdktrace.TracerProvider) {
	ctx := context.Background()
	mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	syncTP = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	b.Cleanup(func() {
		_ = mp.Shutdown(ctx)
		_ = tp.Shutdown(ctx)
		_ = syncTP.Shutdown(ctx)
	})
	return mp, tp, syncTP
}

// variant is one way of instrumenting a Client.
type variant struct {
	name  string
	setup func(*redislock.Client)
}

// variants are the Clients compared: no hook, a hook that does nothing,
// and the OpenTelemetry hooks on the given providers.
func variants(b *testing.B, mp *sdkmetric.MeterProvider, tp, syncTP *sdktrace.TracerProvider) []variant {
	metricsOn := func(c *redislock.Client) {
		if err := redislockotel.InstrumentMetrics(c, redislockotel.WithMeterProvider(mp)); err != nil {
			b.Fatal(err)
		}
	}
	tracingOn := func(tp *sdktrace.TracerProvider) func(c *redislock.Client) {
		return func(c *redislock.Client) {
			if err := redislockotel.InstrumentTracing(c, redislockotel.WithTracerProvider(tp)); err != nil {
				b.Fatal(err)
			}
		}
	}
	return []variant{
		{"no-hook", func(*redislock.Client) {}},
		{"nop-hook", func(c *redislock.Client) { c.AddHook(redislock.NopHook{}) }},
		{"otel-metrics", metricsOn},
		{"otel-tracing", tracingOn(tp)},
		{"otel", func(c *redislock.Client) { metricsOn(c); tracingOn(tp)(c) }},
		{"otel-tracing-sync", tracingOn(syncTP)},
		{"otel-sync", func(c *redislock.Client) { metricsOn(c); tracingOn(syncTP)(c) }},
		{"bare-spans", func(c *redislock.Client) { c.AddHook(&bareSpans{tracer: tp.Tracer("bare")}) }},
		{"bare-spans-sync", func(c *redislock.Client) { c.AddHook(&bareSpans{tracer: syncTP.Tracer("bare")}) }},
	}
}

// bareSpans is the floor of tracing an Obtain+Release with the SDK, through
// either span processor: a span started and ended around each obtain call
// and release, with no attribute and no event, found again through the
// SDK's own context key.
type bareSpans struct {
	redislock.NopHook
	tracer trace.Tracer
}

func (h *bareSpans) ObtainStart(ctx context.Context, _ redislock.ObtainEvent) context.Context {
	ctx, _ = h.tracer.Start(ctx, "obtain")
	return ctx
}

func (h *bareSpans) ObtainDone(ctx context.Context, _ redislock.ObtainEvent) {
	trace.SpanFromContext(ctx).End()
}

func (h *bareSpans) ReleaseStart(ctx context.Context, _ redislock.ReleaseEvent) context.Context {
	ctx, _ = h.tracer.Start(ctx, "release")
	return ctx
}

func (h *bareSpans) ReleaseDone(ctx context.Context, _ redislock.ReleaseEvent) {
	trace.SpanFromContext(ctx).End()
}

// Obtain+Release with each variant, one benchmark after the other.
//
// Run with: go test -run '^$' -bench ObtainRelease -benchmem
func BenchmarkObtainRelease(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	mp, tp, syncTP := providers(b)
	for _, bc := range variants(b, mp, tp, syncTP) {
		b.Run(bc.name, func(b *testing.B) {
			key := redistest.Key(b, "lock")
			locker := redislock.New(rdb)
			bc.setup(locker)
			for b.Loop() {
				obtainRelease(b, ctx, locker, key)
			}
		})
	}
}

func obtainRelease(b *testing.B, ctx context.Context, locker *redislock.Client, key string) {
	lock, err := locker.Obtain(ctx, key, time.Minute, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := lock.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

// interleavedBlock is how many Obtain+Release of one variant run in a row.
const interleavedBlock = 10

// BenchmarkInterleaved runs the variants in turn, a block of
// interleavedBlock Obtain+Release each per iteration, in an order drawn
// anew for each iteration (so that no variant always follows the same
// one), and reports for each variant:
//
//   - name-ns/op: the median time of an Obtain+Release, and name-x its
//     ratio to no-hook's;
//   - name-cpu-ns/op: the process's CPU time (user and system, every
//     goroutine: go-redis's, the SDK's batch processor) during its blocks,
//     per Obtain+Release, and name-cpu-x its ratio to no-hook's.
//
// Allocations per Obtain+Release are BenchmarkObtainRelease's (-benchmem):
// the runtime's counters, read per block, lag behind by the allocations
// cached per processor.
//
// A machine whose load changes from second to second slows every variant
// alike, which separate benchmarks, one after the other, do not; blocks,
// rather than one call of each in turn, keep the background work that a
// variant leaves (the batch processor's goroutine) in its own block but
// for the first call of the next. ns/op is that of a whole iteration.
//
// Run with: go test -run '^$' -bench Interleaved -benchtime 600x
func BenchmarkInterleaved(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	mp, tp, syncTP := providers(b)
	vs := variants(b, mp, tp, syncTP)
	lockers := make([]*redislock.Client, len(vs))
	keys := make([]string, len(vs))
	for i, v := range vs {
		lockers[i] = redislock.New(rdb)
		v.setup(lockers[i])
		keys[i] = redistest.Key(b, v.name)
		obtainRelease(b, ctx, lockers[i], keys[i]) // scripts loaded, sets made
	}
	times := make([][]time.Duration, len(vs))
	cpu := make([]time.Duration, len(vs))
	order := rand.New(rand.NewPCG(1, 2)) // the same orders in every run
	for b.Loop() {
		for _, i := range order.Perm(len(vs)) {
			c0 := cpuTime(b)
			for range interleavedBlock {
				start := time.Now()
				obtainRelease(b, ctx, lockers[i], keys[i])
				times[i] = append(times[i], time.Since(start))
			}
			cpu[i] += cpuTime(b) - c0
		}
	}
	base, baseCPU := median(times[0]), cpu[0]
	for i, v := range vs {
		n := float64(len(times[i]))
		m := median(times[i])
		b.ReportMetric(float64(m.Nanoseconds()), v.name+"-ns/op")
		b.ReportMetric(float64(cpu[i].Nanoseconds())/n, v.name+"-cpu-ns/op")
		if i > 0 {
			b.ReportMetric(float64(m)/float64(base), v.name+"-x")
			b.ReportMetric(float64(cpu[i])/float64(baseCPU), v.name+"-cpu-x")
		}
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
