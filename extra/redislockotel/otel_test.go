package redislockotel_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockotel"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

const waitTimeout = 10 * time.Second

// attempts signals each attempt of an obtain call, as "<outcome>".
type attempts struct {
	redislock.NopHook
	ch chan string
}

func (a *attempts) ObtainAttempt(_ context.Context, e redislock.AttemptEvent) {
	select {
	case a.ch <- e.Outcome.String():
	default:
	}
}

// metrics reads every metric of reader as "name{attrs}" → value: the sum of
// a counter, the count of a histogram.
func metrics(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name+labels(p.Attributes)] = float64(p.Count)
				}
			default:
				t.Fatalf("metric %s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func labels(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func checkMetrics(t *testing.T, when string, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %v, want %v", when, k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && v != 0 {
			t.Errorf("%s: unexpected %s = %v", when, k, v)
		}
	}
}

// The scripted scenario of the issue: a obtains; b contends and waits on
// events; a refreshes, then releases, which hands the lock over to b; an
// admin DEL takes it from b, whose keep-alive reports it lost; b's Release
// finds it not held. The metrics at each step, and the span trees, are
// exactly that.
func TestScenario(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})

	client := redislock.New(rdb)
	svc := attribute.String("service.role", "worker")
	jobName := func(key string) string { return "job" }
	if err := redislockotel.InstrumentMetrics(client, redislockotel.WithMeterProvider(mp), redislockotel.WithAttributes(svc), redislockotel.WithKeyName(jobName)); err != nil {
		t.Fatal(err)
	}
	if err := redislockotel.InstrumentTracing(client, redislockotel.WithTracerProvider(tp), redislockotel.WithAttributes(svc)); err != nil {
		t.Fatal(err)
	}
	seen := &attempts{ch: make(chan string, 16)}
	client.AddHook(seen)

	tracer := tp.Tracer("test")
	ctxA, spanA := tracer.Start(context.Background(), "a")
	ctxB, spanB := tracer.Start(context.Background(), "b")
	opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
	const ttl = 10 * time.Second
	const base = "{redislock.kind=lock,redislock.name=job,service.role=worker}"
	with := func(extra string) string { // base and extra, in attribute order
		parts := append(strings.Split(strings.Trim(base, "{}"), ","), extra)
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	}
	acquire := func(outcome, wait string) string {
		return "redislock.acquire.duration{redislock.kind=lock,redislock.name=job,redislock.outcome=" + outcome + ",redislock.wait=" + wait + ",service.role=worker}"
	}

	a, err := client.Obtain(ctxA, key, ttl, opt)
	if err != nil {
		t.Fatalf("a: Obtain: %v", err)
	}
	<-seen.ch
	checkMetrics(t, "a obtained", metrics(t, reader), map[string]float64{
		acquire("obtained", "none"): 1,
		"redislock.held" + base:     1,
		"redislock.waiting" + base:  0,
	})

	type result struct {
		lock *redislock.Lock
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		l, err := client.Obtain(ctxB, key, ttl, opt)
		bDone <- result{l, err}
	}()
	select {
	case got := <-seen.ch:
		if got != "not_obtained" {
			t.Fatalf("b's first attempt: %s, want not_obtained", got)
		}
	case <-time.After(waitTimeout):
		t.Fatal("b made no attempt")
	}
	checkMetrics(t, "b waiting", metrics(t, reader), map[string]float64{
		acquire("obtained", "none"): 1,
		"redislock.held" + base:     1,
		"redislock.waiting" + base:  1,
	})

	if err := a.Refresh(ctxA, ttl, nil); err != nil {
		t.Fatalf("a: Refresh: %v", err)
	}
	if err := a.Release(ctxA); err != nil {
		t.Fatalf("a: Release: %v", err)
	}
	var b *redislock.Lock
	select {
	case r := <-bDone:
		if r.err != nil {
			t.Fatalf("b: Obtain: %v", r.err)
		}
		b = r.lock
	case <-time.After(waitTimeout):
		t.Fatal("b not obtained after the release")
	}
	checkMetrics(t, "handed over", metrics(t, reader), map[string]float64{
		acquire("obtained", "none"):                                   1,
		acquire("obtained", "event"):                                  1,
		"redislock.held" + base:                                       1,
		"redislock.waiting" + base:                                    0,
		"redislock.hold.duration" + with("redislock.end=handed_over"): 1,
	})

	ka, err := b.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("b: KeepAlive: %v", err)
	}
	if err := rdb.Del(context.Background(), key).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	select {
	case <-ka.Done():
	case <-time.After(waitTimeout):
		t.Fatal("b's keep-alive did not end after the DEL")
	}
	if err := b.Release(ctxB); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("b: Release = %v, want ErrLockNotHeld", err)
	}
	spanA.End()
	spanB.End()
	checkMetrics(t, "the end", metrics(t, reader), map[string]float64{
		acquire("obtained", "none"):                                   1,
		acquire("obtained", "event"):                                  1,
		"redislock.held" + base:                                       0,
		"redislock.waiting" + base:                                    0,
		"redislock.hold.duration" + with("redislock.end=handed_over"): 1,
		"redislock.hold.duration" + with("redislock.end=lost"):        1,
		"redislock.lost" + with("redislock.reason=gone"):              1,
	})

	// The span trees: under a, obtain (one attempt, which obtained: no
	// event), refresh, release (handed over); under b, obtain (an event
	// per attempt until the one that the handover let in) and the release
	// that found the lock lost. Nothing else.
	tree := map[string][]string{}
	names := map[trace.SpanID]string{}
	for _, s := range sr.Ended() {
		names[s.SpanContext().SpanID()] = s.Name()
	}
	for _, s := range sr.Ended() {
		parent := names[s.Parent().SpanID()]
		if parent == "" {
			parent = "-"
		}
		tree[parent] = append(tree[parent], describe(s))
	}
	gotA, gotB := tree["a"], tree["b"]
	wantA := []string{
		"redislock.obtain ok [] outcome=obtained attempts=1 wait=none",
		"redislock.refresh ok [] outcome=obtained",
		"redislock.release ok [] handed_over=1 held",
	}
	if !slices.Equal(gotA, wantA) {
		t.Errorf("spans under a:\n\t%s\nwant:\n\t%s", strings.Join(gotA, "\n\t"), strings.Join(wantA, "\n\t"))
	}
	if len(gotB) != 2 {
		t.Fatalf("spans under b: %q, want obtain and release", gotB)
	}
	n := strings.Count(gotB[0], "attempt ") + 1 // and the one that obtained
	var events []string
	events = append(events, "attempt 1 not_obtained")
	for i := 2; i < n; i++ {
		events = append(events, fmt.Sprintf("attempt %d not_obtained blocked=true", i))
	}
	wantB := []string{
		fmt.Sprintf("redislock.obtain ok [%s] outcome=obtained attempts=%d wait=event handed_over=true", strings.Join(events, " "), n),
		"redislock.release error [] end=not_held",
	}
	if n < 2 || !slices.Equal(gotB, wantB) {
		t.Errorf("spans under b:\n\t%s\nwant:\n\t%s", strings.Join(gotB, "\n\t"), strings.Join(wantB, "\n\t"))
	}
	if got := tree["-"]; !slices.Equal(got, []string{"a ok []", "b ok []"}) && !slices.Equal(got, []string{"b ok []", "a ok []"}) {
		t.Errorf("root spans: %q, want a and b only", got)
	}
	for _, s := range sr.Ended() {
		if !strings.HasPrefix(s.Name(), "redislock.") {
			continue
		}
		if !slices.Contains(s.Attributes(), svc) || !slices.Contains(s.Attributes(), attribute.String("redislock.kind", "lock")) {
			t.Errorf("span %s: attributes %v lack %v and the kind", s.Name(), s.Attributes(), svc)
		}
	}
}

// describe writes a span as "name status [events] attributes", with the
// attributes that say what happened (not the durations).
func describe(s sdktrace.ReadOnlySpan) string {
	status := "ok"
	if s.Status().Code == codes.Error {
		status = "error"
	}
	var events []string
	for _, e := range s.Events() {
		parts := []string{e.Name}
		for _, kv := range e.Attributes {
			parts = append(parts, value(kv))
		}
		events = append(events, strings.Join(parts, " "))
	}
	out := fmt.Sprintf("%s %s [%s]", s.Name(), status, strings.Join(events, " "))
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case "redislock.outcome", "redislock.attempts", "redislock.wait", "redislock.handed_over", "redislock.end":
			out += " " + strings.TrimPrefix(string(kv.Key), "redislock.") + "=" + kv.Value.String()
		case "redislock.held":
			out += " held"
		}
	}
	return out
}

func value(kv attribute.KeyValue) string {
	switch kv.Key {
	case "redislock.attempt", "redislock.outcome":
		return kv.Value.String()
	}
	return strings.TrimPrefix(string(kv.Key), "redislock.") + "=" + kv.Value.String()
}

// Without WithKeyName, no point has a name: every lock counts together.
func TestNoKeyName(t *testing.T) {
	rdb := redistest.Standalone(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	client := redislock.New(rdb)
	if err := redislockotel.InstrumentMetrics(client, redislockotel.WithMeterProvider(mp)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		l, err := client.Obtain(ctx, redistest.Key(t, fmt.Sprint("k", i)), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	checkMetrics(t, "3 locks", metrics(t, reader), map[string]float64{
		"redislock.acquire.duration{redislock.kind=lock,redislock.outcome=obtained,redislock.wait=none}": 3,
		"redislock.hold.duration{redislock.end=released,redislock.kind=lock}":                            3,
		"redislock.held{redislock.kind=lock}":                                                            0,
		"redislock.waiting{redislock.kind=lock}":                                                         0,
	})
}
