package redislockprom_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockprom"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

const waitTimeout = 10 * time.Second

// attempts signals the outcome of each attempt of an obtain call.
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

// series gathers reg as "name{labels}" → value: a counter's or gauge's
// value, a histogram's sample count (name_count).
func series(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			id := "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetHistogram() != nil:
				out[f.GetName()+"_count"+id] = float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				out[f.GetName()+id] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[f.GetName()+id] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func check(t *testing.T, when string, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s: %s = %v (present %v), want %v", when, k, g, ok, v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected series %s = %v", when, k, v)
		}
	}
}

// The scripted scenario of the issue, as in extra/redislockotel: a
// obtains; b contends and waits on events; a releases, handing the lock
// over to b; an admin DEL takes it from b, whose keep-alive reports the
// loss; b's Release finds it not held. The series after each step are
// exactly that.
func TestScenario(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	reg := prometheus.NewRegistry()
	col := redislockprom.NewCollector(&redislockprom.Options{
		ConstLabels: prometheus.Labels{"role": "worker"},
		KeyName:     func(string) string { return "job" },
	})
	reg.MustRegister(col)
	client := redislock.New(rdb)
	client.AddHook(col)
	seen := &attempts{ch: make(chan string, 16)}
	client.AddHook(seen)
	ctx := context.Background()
	opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
	const ttl = 10 * time.Second
	const l = "kind=lock,name=job,role=worker"
	acquire := func(outcome, wait string) string {
		return "redislock_acquire_duration_seconds_count{kind=lock,name=job,outcome=" + outcome + ",role=worker,wait=" + wait + "}"
	}
	hold := func(end string) string {
		return "redislock_hold_duration_seconds_count{end=" + end + "," + l + "}"
	}

	a, err := client.Obtain(ctx, key, ttl, opt)
	if err != nil {
		t.Fatalf("a: Obtain: %v", err)
	}
	<-seen.ch
	check(t, "a obtained", series(t, reg), map[string]float64{
		acquire("obtained", "none"):    1,
		"redislock_held{" + l + "}":    1,
		"redislock_waiting{" + l + "}": 0,
	})

	type result struct {
		lock *redislock.Lock
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		l, err := client.Obtain(ctx, key, ttl, opt)
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
	check(t, "b waiting", series(t, reg), map[string]float64{
		acquire("obtained", "none"):    1,
		"redislock_held{" + l + "}":    1,
		"redislock_waiting{" + l + "}": 1,
	})

	if err := a.Release(ctx); err != nil {
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
	check(t, "handed over", series(t, reg), map[string]float64{
		acquire("obtained", "none"):    1,
		acquire("obtained", "event"):   1,
		hold("handed_over"):            1,
		"redislock_held{" + l + "}":    1,
		"redislock_waiting{" + l + "}": 0,
	})

	ka, err := b.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("b: KeepAlive: %v", err)
	}
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	select {
	case <-ka.Done():
	case <-time.After(waitTimeout):
		t.Fatal("b's keep-alive did not end after the DEL")
	}
	if err := b.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("b: Release = %v, want ErrLockNotHeld", err)
	}
	check(t, "the end", series(t, reg), map[string]float64{
		acquire("obtained", "none"):  1,
		acquire("obtained", "event"): 1,
		hold("handed_over"):          1,
		hold("lost"):                 1,
		"redislock_lost_total{kind=lock,name=job,reason=gone,role=worker}": 1,
		"redislock_held{" + l + "}":                                        0,
		"redislock_waiting{" + l + "}":                                     0,
	})

	// The exposition itself, for the series whose values are exact.
	want := `
# HELP redislock_lost_total Locks (and permits, holds, leaderships: see kind) that a keep-alive lost, by reason (gone, taken, expired, max_hold, error).
# TYPE redislock_lost_total counter
redislock_lost_total{kind="lock",name="job",reason="gone",role="worker"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "redislock_lost_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 7 {
		t.Errorf("GatherAndCount = %d, %v; want 7 series", n, err)
	}
}

// Without KeyName the lost counters of every reason, and the gauges, exist
// from the start at 0; a polled wait that gives up is "not_obtained",
// "poll"; a lock found taken by a keep-alive counts as taken.
func TestNotObtainedAndTaken(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	reg := prometheus.NewRegistry()
	col := redislockprom.NewCollector(nil)
	reg.MustRegister(col)
	client := redislock.New(rdb)
	client.AddHook(col)
	ctx := context.Background()

	start := series(t, reg)
	for _, r := range []string{"gone", "taken", "expired", "max_hold", "error"} {
		if v, ok := start[fmt.Sprintf("redislock_lost_total{kind=lock,reason=%s}", r)]; !ok || v != 0 {
			t.Errorf("lost_total{reason=%s} at start = %v (present %v), want 0", r, v, ok)
		}
	}

	a, err := client.Obtain(ctx, key, time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	opt := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 2)}
	if _, err := client.Obtain(ctx, key, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("second Obtain = %v, want ErrNotObtained", err)
	}
	ka, err := a.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	if err := rdb.Set(ctx, key, "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	select {
	case <-ka.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the keep-alive did not end after the SET")
	}
	ka.Stop() // Lost is reported after Done closes, on the goroutine Stop waits for
	check(t, "the end", series(t, reg), map[string]float64{
		"redislock_acquire_duration_seconds_count{kind=lock,outcome=obtained,wait=none}":     1,
		"redislock_acquire_duration_seconds_count{kind=lock,outcome=not_obtained,wait=poll}": 1,
		"redislock_hold_duration_seconds_count{end=lost,kind=lock}":                          1,
		"redislock_lost_total{kind=lock,reason=gone}":                                        0,
		"redislock_lost_total{kind=lock,reason=taken}":                                       1,
		"redislock_lost_total{kind=lock,reason=expired}":                                     0,
		"redislock_lost_total{kind=lock,reason=max_hold}":                                    0,
		"redislock_lost_total{kind=lock,reason=error}":                                       0,
		"redislock_held{kind=lock}":                                                          0,
		"redislock_waiting{kind=lock}":                                                       0,
	})
	if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
