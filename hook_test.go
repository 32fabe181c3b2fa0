package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// who labels the calls of one party of a test, through the caller's ctx.
type who struct{}

// spanKey is what the recorder's Start methods put in the context they
// return; the events after them must see it.
type spanKey struct{}

// recorder is a Hook that writes each event as a line, per party: the
// label in the ctx of the call or, for a keep-alive's events, the label of
// the call that obtained the lock.
type recorder struct {
	mu     sync.Mutex
	lines  map[string][]string
	owners map[redislock.Handle]string
	notify chan string // each line, when not nil (never blocks the hook)
}

func newRecorder() *recorder {
	return &recorder{lines: map[string][]string{}, owners: map[redislock.Handle]string{}, notify: make(chan string, 100)}
}

// add records a line about handle, of kind (prefixed to the lines of
// kinds other than locks); lock is the event's Lock field, which must be
// the handle for a lock and nil for the others (the line says BAD-LOCK
// otherwise).
func (r *recorder) add(ctx context.Context, kind redislock.Kind, lock *redislock.Lock, handle redislock.Handle, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if kind != redislock.KindLock {
		line = kind.String() + " " + line
	}
	if (kind == redislock.KindLock && handle != nil && handle != redislock.Handle(lock)) || (kind != redislock.KindLock && lock != nil) {
		line += " BAD-LOCK"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	party, _ := ctx.Value(who{}).(string)
	if party == "" && handle != nil {
		party = r.owners[handle]
	}
	if handle != nil && party != "" {
		r.owners[handle] = party
	}
	if party == "" {
		party = "?"
	}
	r.lines[party] = append(r.lines[party], line)
	select {
	case r.notify <- party + ": " + line:
	default:
	}
}

// owner returns the party that handle was reported to, "" if none.
func (r *recorder) owner(handle redislock.Handle) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owners[handle]
}

func (r *recorder) of(party string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lines[party])
}

// waitFor waits until the recorder saw line.
func (r *recorder) waitFor(t *testing.T, line string) {
	t.Helper()
	timeout := time.After(waitTimeout)
	for {
		select {
		case got := <-r.notify:
			if got == line {
				return
			}
		case <-timeout:
			t.Fatalf("no event %q within %v", line, waitTimeout)
		}
	}
}

func inSpan(ctx context.Context) string {
	if ctx.Value(spanKey{}) == nil {
		return " NO-SPAN"
	}
	return ""
}

func errText(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, redislock.ErrLockNotHeld):
		return "ErrLockNotHeld"
	case errors.Is(err, redislock.ErrNotObtained):
		return "ErrNotObtained"
	}
	return "error"
}

func (r *recorder) ObtainStart(ctx context.Context, e redislock.ObtainEvent) context.Context {
	r.add(ctx, redislock.KindLock, nil, nil, "obtain-start %s %v %v", e.Kind, e.Keys, e.TTL)
	return context.WithValue(ctx, spanKey{}, true)
}

func (r *recorder) ObtainAttempt(ctx context.Context, e redislock.AttemptEvent) {
	r.add(ctx, e.Kind, nil, nil, "attempt %d %s blocked=%v handedOver=%v err=%s%s", e.Attempt, e.Outcome, e.Blocked, e.HandedOver, errText(e.Err), inSpan(ctx))
}

func (r *recorder) ObtainDone(ctx context.Context, e redislock.ObtainEvent) {
	r.add(ctx, e.Kind, e.Lock, e.Handle, "obtain-done %s attempts=%d wait=%s handedOver=%v lock=%v err=%s%s", e.Outcome, e.Attempts, e.Wait, e.HandedOver, e.Handle != nil, errText(e.Err), inSpan(ctx))
}

func (r *recorder) ReleaseStart(ctx context.Context, e redislock.ReleaseEvent) context.Context {
	r.add(ctx, e.Kind, e.Lock, e.Handle, "release-start")
	return context.WithValue(ctx, spanKey{}, true)
}

func (r *recorder) ReleaseDone(ctx context.Context, e redislock.ReleaseEvent) {
	r.add(ctx, e.Kind, e.Lock, e.Handle, "release-done handedOver=%d endsHold=%v held=%v err=%s%s", e.HandedOver, e.EndsHold, e.Held > 0, errText(e.Err), inSpan(ctx))
}

func (r *recorder) RefreshStart(ctx context.Context, e redislock.RefreshEvent) context.Context {
	r.add(ctx, e.Kind, e.Lock, e.Handle, "refresh-start %v keepAlive=%v", e.TTL, e.KeepAlive)
	return context.WithValue(ctx, spanKey{}, true)
}

func (r *recorder) RefreshDone(ctx context.Context, e redislock.RefreshEvent) {
	r.add(ctx, e.Kind, e.Lock, e.Handle, "refresh-done keepAlive=%v err=%s%s", e.KeepAlive, errText(e.Err), inSpan(ctx))
}

func (r *recorder) Lost(e redislock.LostEvent) {
	r.add(context.Background(), e.Kind, e.Lock, e.Handle, "lost %s endsHold=%v held=%v lockLost=%v", e.Reason, e.EndsHold, e.Held > 0, errors.Is(e.Err, redislock.ErrLockLost))
}

func checkLines(t *testing.T, party string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("events of %s:\ngot:\n\t%s\nwant:\n\t%s", party, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// The scripted scenario: a obtains, b contends and waits on events, a
// refreshes and releases, which hands the lock over to b; an admin DEL
// takes it from b, whose keep-alive reports it lost; b's Release then
// finds it not held. Every event, in order, per party.
func TestHookScenario(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
	ctxA := context.WithValue(context.Background(), who{}, "a")
	ctxB := context.WithValue(context.Background(), who{}, "b")
	const ttl = 10 * time.Second

	a, err := client.Obtain(ctxA, key, ttl, opt)
	if err != nil {
		t.Fatalf("a: Obtain: %v", err)
	}
	type result struct {
		lock *redislock.Lock
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		l, err := client.Obtain(ctxB, key, ttl, opt)
		bDone <- result{l, err}
	}()
	rec.waitFor(t, "b: attempt 1 not_obtained blocked=false handedOver=false err=nil")
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
		t.Fatalf("b not obtained within %v of the release", waitTimeout)
	}

	ka, err := b.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("b: KeepAlive: %v", err)
	}
	if err := rdb.Del(context.Background(), key).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	recv(t, ka.Done(), "b's keep-alive to end after the DEL")
	if err := b.Release(ctxB); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("b: Release = %v, want ErrLockNotHeld", err)
	}

	checkLines(t, "a", rec.of("a"), []string{
		"obtain-start lock [" + key + "] 10s",
		"attempt 1 obtained blocked=false handedOver=false err=nil",
		"obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"refresh-start 10s keepAlive=false",
		"refresh-done keepAlive=false err=nil",
		"release-start",
		"release-done handedOver=1 endsHold=true held=true err=nil",
	})
	// b blocks until a's release hands the lock over; a block that ended
	// without it (250 ms at first) adds attempts that found it held.
	got := rec.of("b")
	blocks := 0
	for _, l := range got {
		if l == "attempt "+fmt.Sprint(blocks+2)+" not_obtained blocked=true handedOver=false err=nil" {
			blocks++
		}
	}
	want := []string{
		"obtain-start lock [" + key + "] 10s",
		"attempt 1 not_obtained blocked=false handedOver=false err=nil",
	}
	for i := range blocks {
		want = append(want, fmt.Sprintf("attempt %d not_obtained blocked=true handedOver=false err=nil", i+2))
	}
	want = append(want,
		fmt.Sprintf("attempt %d obtained blocked=true handedOver=true err=nil", blocks+2),
		fmt.Sprintf("obtain-done obtained attempts=%d wait=event handedOver=true lock=true err=nil", blocks+2),
		"refresh-start 600ms keepAlive=true",
		"refresh-done keepAlive=true err=ErrNotObtained",
		"lost gone endsHold=true held=true lockLost=true",
		"release-start",
		"release-done handedOver=0 endsHold=false held=false err=ErrLockNotHeld",
	)
	checkLines(t, "b", got, want)
	checkLines(t, "?", rec.of("?"), nil)
}

// A polled wait that gives up, and a key taken by another holder behind a
// keep-alive's back.
func TestHookNotObtainedAndTaken(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	ctxA := context.WithValue(context.Background(), who{}, "a")
	ctxB := context.WithValue(context.Background(), who{}, "b")

	a, err := client.Obtain(ctxA, key, time.Minute, nil)
	if err != nil {
		t.Fatalf("a: Obtain: %v", err)
	}
	opt := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 2)}
	if _, err := client.Obtain(ctxB, key, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("b: Obtain = %v, want ErrNotObtained", err)
	}
	ka, err := a.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("a: KeepAlive: %v", err)
	}
	if err := rdb.Set(context.Background(), key, "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	recv(t, ka.Done(), "a's keep-alive to end after the SET")
	ka.Stop() // Lost comes after Done is closed, on the goroutine Stop waits for
	checkLines(t, "a", rec.of("a"), []string{
		"obtain-start lock [" + key + "] 1m0s",
		"attempt 1 obtained blocked=false handedOver=false err=nil",
		"obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"refresh-start 600ms keepAlive=true",
		"refresh-done keepAlive=true err=ErrNotObtained",
		"lost taken endsHold=true held=true lockLost=true",
	})
	checkLines(t, "b", rec.of("b"), []string{
		"obtain-start lock [" + key + "] 1m0s",
		"attempt 1 not_obtained blocked=false handedOver=false err=nil",
		"attempt 2 not_obtained blocked=false handedOver=false err=nil",
		"attempt 3 not_obtained blocked=false handedOver=false err=nil",
		"obtain-done not_obtained attempts=3 wait=poll handedOver=false lock=false err=ErrNotObtained",
	})
}

// A keep-alive whose refreshes fail with transient errors until its lease
// runs out, and one that reaches MaxHold.
func TestHookLostExpiredAndMaxHold(t *testing.T) {
	rdb := redistest.Standalone(t)
	f := newFaultyClient(rdb)
	rec := newRecorder()
	client := redislock.New(f)
	client.AddHook(rec)
	ctx := context.WithValue(context.Background(), who{}, "a")

	lock, err := client.Obtain(ctx, redistest.Key(t, "expired"), 300*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	f.failNext(1<<30, errTransient)
	ka, err := lock.KeepAlive(300*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	recv(t, ka.Done(), "the keep-alive to end while refreshes fail")
	f.failNext(0, nil)
	ka.Stop() // Lost comes after Done is closed, on the goroutine Stop waits for
	// A refresh in flight at the loss may report after it.
	lines := slices.DeleteFunc(rec.of("a"), func(l string) bool { return strings.HasPrefix(l, "refresh-") })
	if got, want := lines[len(lines)-1], "lost expired endsHold=true held=true lockLost=true"; got != want {
		t.Errorf("last event but refreshes %q, want %q", got, want)
	}

	rec2 := newRecorder()
	client2 := redislock.New(rdb)
	client2.AddHook(rec2)
	lock2, err := client2.Obtain(ctx, redistest.Key(t, "maxhold"), time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	defer lock2.Release(ctx)
	ka2, err := lock2.KeepAlive(time.Minute, &redislock.KeepAliveOptions{MaxHold: time.Millisecond})
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	recv(t, ka2.Done(), "MaxHold")
	ka2.Stop()
	lines = rec2.of("a")
	if got, want := lines[len(lines)-1], "lost max_hold endsHold=true held=true lockLost=true"; got != want {
		t.Errorf("last event %q, want %q", got, want)
	}
}

// Hooks added while locks are in use: each lock reports to the hooks it
// was obtained with, and AddHook races with nothing (run with -race).
func TestAddHookConcurrent(t *testing.T) {
	rdb := redistest.Standalone(t)
	client := redislock.New(rdb)
	ctx := context.Background()
	before, err := client.Obtain(ctx, redistest.Key(t, "before"), time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	recs := []*recorder{newRecorder(), newRecorder(), newRecorder()}
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() { client.AddHook(r) })
		wg.Go(func() {
			l, err := client.Obtain(ctx, redistest.Key(t, fmt.Sprint("during", i)), time.Minute, nil)
			if err != nil {
				t.Errorf("Obtain: %v", err)
				return
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
	wg.Wait()
	client.AddHook(nil)
	if err := before.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	after, err := client.Obtain(ctx, redistest.Key(t, "after"), time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	if err := after.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	for i, r := range recs {
		got := r.of("?")
		// The lock obtained before any hook reports nothing; the last one
		// reports to every hook, in full.
		if n := len(got); n < 5 || got[n-5] != "obtain-start lock ["+redistest.Key(t, "after")+"] 1m0s" {
			t.Errorf("hook %d: events end with %q, want the whole life of the last lock", i, got)
		}
		for _, l := range got {
			if strings.Contains(l, "before") {
				t.Errorf("hook %d saw the lock obtained before it: %q", i, l)
			}
		}
	}
	var nilClient *redislock.Client
	nilClient.AddHook(recs[0]) // ignored, no panic
}

// An attached lock reports its releases to the Client's hooks, but it was
// never counted as held, so its Release ends no hold.
func TestHookAttach(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	ctx := context.WithValue(context.Background(), who{}, "a")
	orig, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	att, err := client.Attach(orig.Keys(), orig.Token(), 0)
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if err := att.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	checkLines(t, "a", rec.of("a"), []string{
		"release-start",
		"release-done handedOver=0 endsHold=false held=false err=nil",
	})
}

func TestHookStrings(t *testing.T) {
	for _, tc := range []struct {
		got  fmt.Stringer
		want string
	}{
		{redislock.KindLock, "lock"},
		{redislock.KindSemaphore, "semaphore"},
		{redislock.KindRead, "read"},
		{redislock.KindWrite, "write"},
		{redislock.KindElection, "election"},
		{redislock.Kind(0), "unknown"},
		{redislock.OutcomeObtained, "obtained"},
		{redislock.OutcomeNotObtained, "not_obtained"},
		{redislock.OutcomeError, "error"},
		{redislock.Outcome(0), "unknown"},
		{redislock.WaitNone, "none"},
		{redislock.WaitPolled, "poll"},
		{redislock.WaitEvents, "event"},
		{redislock.WaitMode(0), "unknown"},
		{redislock.LostGone, "gone"},
		{redislock.LostTaken, "taken"},
		{redislock.LostExpired, "expired"},
		{redislock.LostMaxHold, "max_hold"},
		{redislock.LostError, "error"},
		{redislock.LostReason(0), "unknown"},
	} {
		if s := tc.got.String(); s != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.got, s, tc.want)
		}
	}
	var h redislock.Hook = redislock.NopHook{}
	ctx := context.Background()
	if h.ObtainStart(ctx, redislock.ObtainEvent{}) != ctx || h.ReleaseStart(ctx, redislock.ReleaseEvent{}) != ctx || h.RefreshStart(ctx, redislock.RefreshEvent{}) != ctx {
		t.Error("NopHook's Start methods changed the context")
	}
}

// logHook prints what it is told: the start of a --verbose mode.
type logHook struct{ redislock.NopHook }

func (logHook) ObtainDone(_ context.Context, e redislock.ObtainEvent) {
	fmt.Println("obtain", e.Keys, e.Outcome, "attempts:", e.Attempts, "wait:", e.Wait)
}

func (logHook) ReleaseDone(_ context.Context, e redislock.ReleaseEvent) {
	fmt.Println("release", e.Keys, "handed over:", e.HandedOver, "err:", e.Err)
}

func (logHook) Lost(e redislock.LostEvent) {
	fmt.Println("lost", e.Keys, e.Reason)
}

// A hook sees every obtain call, release and loss of the Client's locks.
func ExampleClient_AddHook() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)
	locker.AddHook(logHook{})

	lock, err := locker.Obtain(ctx, "example:hook", time.Minute, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = locker.Obtain(ctx, "example:hook", time.Minute, nil)
	fmt.Println(errors.Is(err, redislock.ErrNotObtained))
	if err := lock.Release(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// obtain [example:hook] obtained attempts: 1 wait: none
	// obtain [example:hook] not_obtained attempts: 1 wait: none
	// true
	// release [example:hook] handed over: 0 err: <nil>
}

// withoutKeepAliveRefreshes drops the lines of a keep-alive's refreshes
// that succeeded: how many run depends on the machine's speed.
func withoutKeepAliveRefreshes(lines []string) []string {
	return slices.DeleteFunc(lines, func(l string) bool {
		return strings.Contains(l, "refresh-start") && strings.Contains(l, "keepAlive=true") ||
			strings.Contains(l, "refresh-done keepAlive=true err=nil")
	})
}

// A semaphore of one permit: a acquires, refreshes and keeps it alive; b's
// polled acquire gives up; an admin DEL of the semaphore loses a's permit;
// a's Release then finds it not held.
func TestHookSemaphore(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "sem")
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	ctxA := context.WithValue(context.Background(), who{}, "a")
	ctxB := context.WithValue(context.Background(), who{}, "b")
	sem := client.Semaphore(key, 1)

	p, err := sem.Acquire(ctxA, time.Minute, nil)
	if err != nil {
		t.Fatalf("a: Acquire: %v", err)
	}
	opt := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 1)}
	if _, err := sem.Acquire(ctxB, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("b: Acquire = %v, want ErrNotObtained", err)
	}
	if err := p.Refresh(ctxA, time.Minute, nil); err != nil {
		t.Fatalf("a: Refresh: %v", err)
	}
	ka, err := p.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("a: KeepAlive: %v", err)
	}
	if err := rdb.Del(context.Background(), key).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	recv(t, ka.Done(), "a's keep-alive to end after the DEL")
	if err := p.Release(ctxA); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("a: Release = %v, want ErrLockNotHeld", err)
	}
	checkLines(t, "a", withoutKeepAliveRefreshes(rec.of("a")), []string{
		"obtain-start semaphore [" + key + "] 1m0s",
		"semaphore attempt 1 obtained blocked=false handedOver=false err=nil",
		"semaphore obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"semaphore refresh-start 1m0s keepAlive=false",
		"semaphore refresh-done keepAlive=false err=nil",
		"semaphore refresh-done keepAlive=true err=ErrNotObtained",
		"semaphore lost gone endsHold=true held=true lockLost=true",
		"semaphore release-start",
		"semaphore release-done handedOver=0 endsHold=false held=false err=ErrLockNotHeld",
	})
	checkLines(t, "b", rec.of("b"), []string{
		"obtain-start semaphore [" + key + "] 1m0s",
		"semaphore attempt 1 not_obtained blocked=false handedOver=false err=nil",
		"semaphore attempt 2 not_obtained blocked=false handedOver=false err=nil",
		"semaphore obtain-done not_obtained attempts=2 wait=poll handedOver=false lock=false err=ErrNotObtained",
	})
	if got := rec.owner(p); got != "a" {
		t.Errorf("the permit was reported to %q, want a", got)
	}
}

// An RWMutex: a read hold, a writer that gives up behind it, the write
// lock taken and downgraded to a read hold, whose keep-alive loses it to
// an admin DEL.
func TestHookRWMutex(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := redistest.Key(t, "rw")
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	ctxA := context.WithValue(context.Background(), who{}, "a")
	ctxB := context.WithValue(context.Background(), who{}, "b")
	rw := client.RWMutex(name)

	r, err := rw.RLock(ctxA, time.Minute, nil)
	if err != nil {
		t.Fatalf("a: RLock: %v", err)
	}
	if _, err := rw.Lock(ctxB, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("b: Lock = %v, want ErrNotObtained", err)
	}
	if err := r.Release(ctxA); err != nil {
		t.Fatalf("a: Release: %v", err)
	}
	w, err := rw.Lock(ctxB, time.Minute, nil)
	if err != nil {
		t.Fatalf("b: Lock: %v", err)
	}
	if err := w.Refresh(ctxB, time.Minute, nil); err != nil {
		t.Fatalf("b: Refresh: %v", err)
	}
	r2, err := w.Downgrade(ctxB, time.Minute)
	if err != nil {
		t.Fatalf("b: Downgrade: %v", err)
	}
	ka, err := r2.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("b: KeepAlive: %v", err)
	}
	if err := rdb.Del(context.Background(), rwKeys(rw)[rwR]).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	recv(t, ka.Done(), "b's keep-alive to end after the DEL")
	ka.Stop() // Lost comes after Done is closed, on the goroutine Stop waits for
	checkLines(t, "a", rec.of("a"), []string{
		"obtain-start read [" + name + "] 1m0s",
		"read attempt 1 obtained blocked=false handedOver=false err=nil",
		"read obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"read release-start",
		"read release-done handedOver=0 endsHold=true held=true err=nil",
	})
	checkLines(t, "b", withoutKeepAliveRefreshes(rec.of("b")), []string{
		"obtain-start write [" + name + "] 1m0s",
		"write attempt 1 not_obtained blocked=false handedOver=false err=nil",
		"write obtain-done not_obtained attempts=1 wait=none handedOver=false lock=false err=ErrNotObtained",
		"obtain-start write [" + name + "] 1m0s",
		"write attempt 1 obtained blocked=false handedOver=false err=nil",
		"write obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"write refresh-start 1m0s keepAlive=false",
		"write refresh-done keepAlive=false err=nil",
		"write release-start",
		"obtain-start read [" + name + "] 1m0s",
		"read attempt 1 obtained blocked=false handedOver=false err=nil",
		"read obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"write release-done handedOver=0 endsHold=true held=true err=nil",
		"read refresh-done keepAlive=true err=ErrNotObtained",
		"read lost gone endsHold=true held=true lockLost=true",
	})
	if rec.owner(r) != "a" || rec.owner(w) != "b" || rec.owner(r2) != "b" {
		t.Errorf("handles reported to %q, %q, %q; want a, b, b", rec.owner(r), rec.owner(w), rec.owner(r2))
	}
}

// A write lock whose key another token took behind its keep-alive's back
// is lost as "taken", as a lock is (TestHookNotObtainedAndTaken), not as
// "gone".
func TestHookWriteLockTaken(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := redistest.Key(t, "rw")
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	ctxA := context.WithValue(context.Background(), who{}, "a")
	rw := client.RWMutex(name)

	w, err := rw.Lock(ctxA, time.Minute, nil)
	if err != nil {
		t.Fatalf("a: Lock: %v", err)
	}
	ka, err := w.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("a: KeepAlive: %v", err)
	}
	if err := rdb.Set(context.Background(), rwKeys(rw)[rwW], "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	recv(t, ka.Done(), "a's keep-alive to end after the SET")
	ka.Stop() // Lost comes after Done is closed, on the goroutine Stop waits for
	checkLines(t, "a", withoutKeepAliveRefreshes(rec.of("a")), []string{
		"obtain-start write [" + name + "] 1m0s",
		"write attempt 1 obtained blocked=false handedOver=false err=nil",
		"write obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"write refresh-done keepAlive=true err=ErrNotObtained",
		"write lost taken endsHold=true held=true lockLost=true",
	})
}

// An election: a is elected and resigns, which elects b, waiting; an admin
// DEL of the election key loses b's leadership; b's Resign then finds it
// not held.
func TestHookElection(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := redistest.Key(t, "election")
	rec := newRecorder()
	client := redislock.New(rdb)
	client.AddHook(rec)
	ctxA := context.WithValue(context.Background(), who{}, "a")
	ctxB := context.WithValue(context.Background(), who{}, "b")
	el := client.Election(name)
	const ttl = 2 * time.Second

	a, err := el.Campaign(ctxA, "a", ttl)
	if err != nil {
		t.Fatalf("a: Campaign: %v", err)
	}
	type result struct {
		lead *redislock.Leadership
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		l, err := el.Campaign(ctxB, "b", ttl)
		bDone <- result{l, err}
	}()
	rec.waitFor(t, "b: election attempt 1 not_obtained blocked=false handedOver=false err=nil")
	if err := a.Resign(ctxA); err != nil {
		t.Fatalf("a: Resign: %v", err)
	}
	var b *redislock.Leadership
	select {
	case r := <-bDone:
		if r.err != nil {
			t.Fatalf("b: Campaign: %v", r.err)
		}
		b = r.lead
	case <-time.After(waitTimeout):
		t.Fatalf("b not elected within %v of the resignation", waitTimeout)
	}
	if err := rdb.Del(context.Background(), name).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	recv(t, b.Done(), "b's leadership to end after the DEL")
	if err := b.Resign(ctxB); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Fatalf("b: Resign = %v, want ErrLockNotHeld", err)
	}
	checkLines(t, "a", withoutKeepAliveRefreshes(rec.of("a")), []string{
		"obtain-start election [" + name + "] 2s",
		"election attempt 1 obtained blocked=false handedOver=false err=nil",
		"election obtain-done obtained attempts=1 wait=none handedOver=false lock=true err=nil",
		"election release-start",
		"election release-done handedOver=1 endsHold=true held=true err=nil",
	})
	got := withoutKeepAliveRefreshes(rec.of("b"))
	blocks := 0
	for _, l := range got {
		if l == "election attempt "+fmt.Sprint(blocks+2)+" not_obtained blocked=true handedOver=false err=nil" {
			blocks++
		}
	}
	want := []string{
		"obtain-start election [" + name + "] 2s",
		"election attempt 1 not_obtained blocked=false handedOver=false err=nil",
	}
	for i := range blocks {
		want = append(want, fmt.Sprintf("election attempt %d not_obtained blocked=true handedOver=false err=nil", i+2))
	}
	want = append(want,
		fmt.Sprintf("election attempt %d obtained blocked=true handedOver=true err=nil", blocks+2),
		fmt.Sprintf("election obtain-done obtained attempts=%d wait=event handedOver=true lock=true err=nil", blocks+2),
		"election refresh-done keepAlive=true err=ErrNotObtained",
		"election lost gone endsHold=true held=true lockLost=true",
		"election release-start",
		"election release-done handedOver=0 endsHold=false held=false err=ErrLockNotHeld",
	)
	checkLines(t, "b", got, want)
	if rec.owner(a) != "a" || rec.owner(b) != "b" {
		t.Errorf("leaderships reported to %q and %q, want a and b", rec.owner(a), rec.owner(b))
	}
	checkLines(t, "?", rec.of("?"), nil)
}

// Every handle of a primitive is a Handle.
var (
	_ redislock.Handle = (*redislock.Lock)(nil)
	_ redislock.Handle = (*redislock.Permit)(nil)
	_ redislock.Handle = (*redislock.ReadLock)(nil)
	_ redislock.Handle = (*redislock.WriteLock)(nil)
	_ redislock.Handle = (*redislock.Leadership)(nil)
)
