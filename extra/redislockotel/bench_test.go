package redislockotel_test

import (
	"context"
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
// OpenTelemetry metrics and tracing hooks on the SDK with a no-op span
// exporter (batched) and a metric reader that is never collected: in one
// run, on one server.
//
// Run with: go test -run '^$' -bench ObtainRelease -benchmem
func BenchmarkObtainRelease(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() {
		_ = mp.Shutdown(ctx)
		_ = tp.Shutdown(ctx)
	})
	for _, bc := range []struct {
		name  string
		setup func(*redislock.Client)
	}{
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
	} {
		b.Run(bc.name, func(b *testing.B) {
			key := redistest.Key(b, "lock")
			locker := redislock.New(rdb)
			bc.setup(locker)
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
