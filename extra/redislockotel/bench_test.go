package redislockotel_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockotel"
	"github.com/redislock/redislock/internal/redistest"
)

// Obtain+Release with no hook, a hook that does nothing, and the
// OpenTelemetry hooks (metrics alone, tracing alone, both) on the SDK with
// a no-op span exporter behind the usual batcher, or called on each span's
// End, and a metric reader that is never collected: in one run, on one
// server.
//
// Run with: go test -run '^$' -bench ObtainRelease -benchmem
func BenchmarkObtainRelease(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	mp, tp, syncTP, unsampledTP := providers(b)
	for _, bc := range variants(b, mp, tp, syncTP, unsampledTP) {
		b.Run(bc.name, func(b *testing.B) {
			key := redistest.Key(b, "lock")
			locker := redislock.New(rdb)
			bc.setup(locker)
			defer reportCPU(b)()
			for b.Loop() {
				lock, err := locker.Obtain(ctx, key, time.Minute, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := lock.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU adds the metric cpu-ns/op: the process's CPU time (user and
// system, every goroutine: go-redis's, the SDK's) per operation. On a busy
// machine it varies much less than the wall-clock ns/op, since it does not
// count the time spent waiting for a core or for Redis.
func reportCPU(b *testing.B) (stop func()) {
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// variant is one way of instrumenting a Client.
type variant struct {
	name  string
	setup func(*redislock.Client)
}

// variants are the Clients compared: no hook, a hook that does nothing,
// and the OpenTelemetry hooks on the given providers.
func variants(b *testing.B, mp *sdkmetric.MeterProvider, tp, syncTP, unsampledTP *sdktrace.TracerProvider) []variant {
	return []variant{
		{"no-hook", func(*redislock.Client) {}},
		{"nop-hook", func(c *redislock.Client) { c.AddHook(redislock.NopHook{}) }},
		{"otel-metrics", func(c *redislock.Client) {
			if err := redislockotel.InstrumentMetrics(c, redislockotel.WithMeterProvider(mp)); err != nil {
				b.Fatal(err)
			}
		}},
		{"otel-tracing", func(c *redislock.Client) {
			if err := redislockotel.InstrumentTracing(c, redislockotel.WithTracerProvider(tp)); err != nil {
				b.Fatal(err)
			}
		}},
		{"otel", func(c *redislock.Client) {
			if err := redislockotel.InstrumentMetrics(c, redislockotel.WithMeterProvider(mp)); err != nil {
				b.Fatal(err)
			}
			if err := redislockotel.InstrumentTracing(c, redislockotel.WithTracerProvider(tp)); err != nil {
				b.Fatal(err)
			}
		}},
		{"otel-sync-export", func(c *redislock.Client) {
			if err := redislockotel.InstrumentMetrics(c, redislockotel.WithMeterProvider(mp)); err != nil {
				b.Fatal(err)
			}
			if err := redislockotel.InstrumentTracing(c, redislockotel.WithTracerProvider(syncTP)); err != nil {
				b.Fatal(err)
			}
		}},
		{"otel-unsampled", func(c *redislock.Client) {
			if err := redislockotel.InstrumentMetrics(c, redislockotel.WithMeterProvider(mp)); err != nil {
				b.Fatal(err)
			}
			if err := redislockotel.InstrumentTracing(c, redislockotel.WithTracerProvider(unsampledTP)); err != nil {
				b.Fatal(err)
			}
		}},
	}
}

// providers returns the SDK providers of the benchmarks, shut down at the
// end of b.
func providers(b *testing.B) (mp *sdkmetric.MeterProvider, tp, syncTP, unsampledTP *sdktrace.TracerProvider) {
	ctx := context.Background()
	mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	// The same, exporting each span on End: no goroutine to wake per span.
	syncTP = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	// The same, with a sampler that records no span.
	unsampledTP = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() {
		_ = mp.Shutdown(ctx)
		_ = tp.Shutdown(ctx)
		_ = syncTP.Shutdown(ctx)
		_ = unsampledTP.Shutdown(ctx)
	})
	return mp, tp, syncTP, unsampledTP
}

// BenchmarkInterleaved runs one Obtain+Release of every variant per
// iteration, in turn, and reports the median time of each (name-ns/op) and
// its ratio to no hook (name-x): a machine whose load changes from second
// to second slows every variant alike, which separate benchmarks, run one
// after the other, do not. ns/op is that of the whole round.
//
// Run with: go test -run '^$' -bench Interleaved -benchtime 5000x
func BenchmarkInterleaved(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	mp, tp, syncTP, unsampledTP := providers(b)
	vs := variants(b, mp, tp, syncTP, unsampledTP)
	lockers := make([]*redislock.Client, len(vs))
	keys := make([]string, len(vs))
	for i, v := range vs {
		lockers[i] = redislock.New(rdb)
		v.setup(lockers[i])
		keys[i] = redistest.Key(b, v.name)
	}
	times := make([][]time.Duration, len(vs))
	for b.Loop() {
		for i, locker := range lockers {
			start := time.Now()
			lock, err := locker.Obtain(ctx, keys[i], time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lock.Release(ctx); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	base := median(times[0])
	for i, v := range vs {
		m := median(times[i])
		b.ReportMetric(float64(m.Nanoseconds()), v.name+"-ns/op")
		if i > 0 {
			b.ReportMetric(float64(m)/float64(base), v.name+"-x")
		}
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
