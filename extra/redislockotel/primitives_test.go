package redislockotel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockotel"
	"github.com/redislock/redislock/internal/redistest"
)

// spanNames returns "name kind" for each span of sr that the hooks made,
// sorted.
func spanNames(sr *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range sr.Ended() {
		if !strings.HasPrefix(s.Name(), "redislock.") {
			continue
		}
		kind := "?"
		for _, kv := range s.Attributes() {
			if kv.Key == "redislock.kind" {
				kind = kv.Value.AsString()
			}
		}
		out = append(out, s.Name()+" "+kind)
	}
	slices.Sort(out)
	return out
}

// campaignWaits signals each attempt of a campaign that found a leader.
type campaignWaits struct {
	redislock.NopHook
	ch chan struct{}
}

func (c *campaignWaits) ObtainAttempt(_ context.Context, e redislock.AttemptEvent) {
	if e.Kind == redislock.KindElection && e.Outcome == redislock.OutcomeNotObtained {
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}
}

// A semaphore, an RW lock and an election on one Client: each reports
// under its own redislock.kind, with the values of what happened, and
// spans named for its operations.
func TestPrimitives(t *testing.T) {
	rdb := redistest.Standalone(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	client := redislock.New(rdb)
	if err := redislockotel.InstrumentMetrics(client, redislockotel.WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	if err := redislockotel.InstrumentTracing(client, redislockotel.WithTracerProvider(tp)); err != nil {
		t.Fatal(err)
	}
	waits := &campaignWaits{ch: make(chan struct{}, 16)}
	client.AddHook(waits)
	ctx := context.Background()
	acquire := func(kind, outcome, wait string) string {
		return "redislock.acquire.duration{redislock.kind=" + kind + ",redislock.outcome=" + outcome + ",redislock.wait=" + wait + "}"
	}
	hold := func(kind, end string) string {
		return "redislock.hold.duration{redislock.end=" + end + ",redislock.kind=" + kind + "}"
	}
	gauges := func(kind string, held, waiting float64) map[string]float64 {
		return map[string]float64{
			"redislock.held{redislock.kind=" + kind + "}":    held,
			"redislock.waiting{redislock.kind=" + kind + "}": waiting,
		}
	}
	merge := func(ms ...map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}

	// A semaphore of two permits: two taken, a third refused, one given
	// back, one lost to an admin DEL behind its keep-alive.
	semKey := redistest.Key(t, "sem")
	sem := client.Semaphore(semKey, 2)
	p1, err := sem.Acquire(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	p2, err := sem.Acquire(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("third Acquire = %v, want ErrNotObtained", err)
	}
	if err := p1.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	ka, err := p2.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	if err := rdb.Del(ctx, semKey).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	select {
	case <-ka.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the permit's keep-alive did not end after the DEL")
	}
	ka.Stop() // Lost is reported after Done closes, on the goroutine Stop waits for
	semMetrics := merge(gauges("semaphore", 0, 0), map[string]float64{
		acquire("semaphore", "obtained", "none"):                         2,
		acquire("semaphore", "not_obtained", "none"):                     1,
		hold("semaphore", "released"):                                    1,
		hold("semaphore", "lost"):                                        1,
		"redislock.lost{redislock.kind=semaphore,redislock.reason=gone}": 1,
	})
	checkMetrics(t, "semaphore", metrics(t, reader), semMetrics)

	// An RW lock: a read hold, a writer refused behind it, the write lock
	// taken once the reader left, downgraded, the read hold released.
	rw := client.RWMutex(redistest.Key(t, "rw"))
	r, err := rw.RLock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	if _, err := rw.Lock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("Lock = %v, want ErrNotObtained", err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	w, err := rw.Lock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	r2, err := w.Downgrade(ctx, time.Minute)
	if err != nil {
		t.Fatalf("Downgrade: %v", err)
	}
	checkMetrics(t, "downgraded", metrics(t, reader), merge(semMetrics, gauges("read", 1, 0), gauges("write", 0, 0), map[string]float64{
		acquire("read", "obtained", "none"):      2,
		acquire("write", "not_obtained", "none"): 1,
		acquire("write", "obtained", "none"):     1,
		hold("read", "released"):                 1,
		hold("write", "released"):                1,
	}))
	if err := r2.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	rwMetrics := merge(gauges("read", 0, 0), gauges("write", 0, 0), map[string]float64{
		acquire("read", "obtained", "none"):      2,
		acquire("write", "not_obtained", "none"): 1,
		acquire("write", "obtained", "none"):     1,
		hold("read", "released"):                 2,
		hold("write", "released"):                1,
	})

	// An election: a elected, b campaigning meanwhile, a resigns and so
	// elects b, b resigns.
	el := client.Election(redistest.Key(t, "election"))
	a, err := el.Campaign(ctx, "a", 2*time.Second)
	if err != nil {
		t.Fatalf("a: Campaign: %v", err)
	}
	type result struct {
		lead *redislock.Leadership
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		l, err := el.Campaign(ctx, "b", 2*time.Second)
		bDone <- result{l, err}
	}()
	select { // b's first attempt found a leading
	case <-waits.ch:
	case <-time.After(waitTimeout):
		t.Fatal("b made no attempt")
	}
	checkMetrics(t, "b campaigning", metrics(t, reader), merge(semMetrics, rwMetrics, gauges("election", 1, 1), map[string]float64{
		acquire("election", "obtained", "none"): 1,
	}))
	if err := a.Resign(ctx); err != nil {
		t.Fatalf("a: Resign: %v", err)
	}
	var b *redislock.Leadership
	select {
	case res := <-bDone:
		if res.err != nil {
			t.Fatalf("b: Campaign: %v", res.err)
		}
		b = res.lead
	case <-time.After(waitTimeout):
		t.Fatal("b not elected after a resigned")
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatalf("b: Resign: %v", err)
	}
	checkMetrics(t, "the end", metrics(t, reader), merge(semMetrics, rwMetrics, gauges("election", 0, 0), map[string]float64{
		acquire("election", "obtained", "none"):  1,
		acquire("election", "obtained", "event"): 1,
		hold("election", "handed_over"):          1,
		hold("election", "released"):             1,
	}))

	want := []string{
		"redislock.election.campaign election",
		"redislock.election.campaign election",
		"redislock.election.resign election",
		"redislock.election.resign election",
		"redislock.rwmutex.lock write",
		"redislock.rwmutex.lock write",
		"redislock.rwmutex.rlock read",
		"redislock.rwmutex.rlock read", // the downgrade's
		"redislock.rwmutex.runlock read",
		"redislock.rwmutex.runlock read",
		"redislock.rwmutex.unlock write", // the downgrade's
		"redislock.semaphore.acquire semaphore",
		"redislock.semaphore.acquire semaphore",
		"redislock.semaphore.acquire semaphore",
		"redislock.semaphore.release semaphore",
	}
	if got := spanNames(sr); !slices.Equal(got, want) {
		t.Errorf("spans:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
