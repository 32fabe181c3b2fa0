package redislockotel

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redislock/redislock"
)

// The hooks' own cost, without Redis: the events of one Obtain+Release
// (start, one attempt, done, release start and done), sent straight to the
// hooks, on the SDK with a metric reader never collected and a no-op span
// exporter.
//
// Run with: go test -run '^$' -bench HookEvents -benchmem
func BenchmarkHookEvents(b *testing.B) {
	ctx := context.Background()
	keys := []string{"job"}
	run := func(b *testing.B, h redislock.Hook) {
		for b.Loop() {
			c := h.ObtainStart(ctx, redislock.ObtainEvent{Kind: redislock.KindLock, Keys: keys, TTL: time.Minute})
			h.ObtainAttempt(c, redislock.AttemptEvent{Kind: redislock.KindLock, Keys: keys, Attempt: 1, Outcome: redislock.OutcomeObtained})
			h.ObtainDone(c, redislock.ObtainEvent{Kind: redislock.KindLock, Keys: keys, TTL: time.Minute, Outcome: redislock.OutcomeObtained, Attempts: 1, Wait: redislock.WaitNone, Duration: time.Millisecond})
			c = h.ReleaseStart(ctx, redislock.ReleaseEvent{Kind: redislock.KindLock, Keys: keys})
			h.ReleaseDone(c, redislock.ReleaseEvent{Kind: redislock.KindLock, Keys: keys, EndsHold: true, Held: time.Millisecond})
		}
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	batched := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	synced := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	b.Cleanup(func() {
		_ = mp.Shutdown(ctx)
		_ = batched.Shutdown(ctx)
		_ = synced.Shutdown(ctx)
	})
	cfg := newConfig()
	cfg.mp = mp
	m, err := newMetricsHook(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("metrics", func(b *testing.B) { run(b, m) })
	for _, tc := range []struct {
		name string
		tp   *sdktrace.TracerProvider
	}{{"tracing-batched", batched}, {"tracing-sync", synced}} {
		c := newConfig()
		c.tp = tc.tp
		h := newTracingHook(c)
		b.Run(tc.name, func(b *testing.B) { run(b, h) })
	}
}
