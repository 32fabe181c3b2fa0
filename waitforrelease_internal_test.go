package redislock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/leaktest"
	"github.com/redislock/redislock/internal/redistest"
	"github.com/redislock/redislock/internal/retry"
)

// The waiting goroutines that leave, obtain or give up leave no goroutine,
// connection, group or key behind. Not parallel: leaktest compares with the
// goroutines of the tests that are paused meanwhile.
func TestWaitLeavesNothingBehind(t *testing.T) {
	srv := redistest.SharedServer(t, redistest.Redis)
	ctx := context.Background()
	admin := srv.Client(t)
	admin.Ping(ctx)
	ignore := leaktest.Now()

	key := redistest.Key(t, "lock")
	companions, _ := handoff.Companions([]string{key})
	queue := companions[1]
	opt := &Options{RetryStrategy: WaitForRelease(nil)}
	holder, err := New(admin).Obtain(ctx, key, time.Minute, opt)
	if err != nil {
		t.Fatal(err)
	}
	shared := redis.NewClient(srv.Options())
	clients := []*redis.Client{shared}
	var wg sync.WaitGroup
	cancelCtx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 8)
	for i := range 8 {
		rdb := shared
		if i%2 == 0 {
			rdb = redis.NewClient(srv.Options())
			clients = append(clients, rdb)
		}
		wctx := ctx
		if i >= 6 {
			wctx = cancelCtx // these two give up
		}
		wg.Go(func() {
			lock, err := New(rdb).Obtain(wctx, key, time.Minute, opt)
			if err == nil {
				err = lock.Release(ctx)
			}
			errs <- err
		})
		for admin.ZCard(ctx, queue).Val() != int64(i+1) {
			// Until the waiter is registered.
		}
	}
	cancel()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	var obtained, gaveUp int
	for err := range errs {
		switch {
		case err == nil:
			obtained++
		case errors.Is(err, context.Canceled):
			gaveUp++
		default:
			t.Errorf("waiter: %v", err)
		}
	}
	if obtained != 6 || gaveUp != 2 {
		t.Errorf("%d waiters obtained the lock and %d gave up, want 6 and 2", obtained, gaveUp)
	}

	for _, c := range clients {
		if s := c.PoolStats(); s.TotalConns != s.IdleConns {
			t.Errorf("%d connections of a client still in use", s.TotalConns-s.IdleConns)
		}
	}
	if keys := admin.Keys(ctx, "*"+redistest.Tag(t)+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left behind: %q", keys)
	}
	if waits, groups, clients := handoff.Default.Waits(); waits+groups+clients != 0 {
		t.Errorf("%d waits, %d groups, %d clients left in the registry", waits, groups, clients)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	leaktest.Check(t, ignore)
}

func TestWaitForReleaseStrategy(t *testing.T) {
	ms := time.Millisecond
	w := WaitForRelease(LimitRetry(LinearBackoff(ms), 2))
	// Where a call retries without events (Refresh, transient errors), it
	// follows the fallback, afresh each call.
	for range 2 {
		s := retry.Start(w)
		for i, want := range []time.Duration{ms, ms, 0} {
			if got := s.NextBackoff(); got != want {
				t.Fatalf("backoff %d = %v, want %v", i+1, got, want)
			}
		}
	}
	if got := w.NextBackoff(); got != ms {
		t.Errorf("NextBackoff = %v, want the fallback's %v", got, ms)
	}
	// The default fallback: ExponentialBackoff(8ms, 128ms) with ±50% jitter.
	s := retry.Start(WaitForRelease(nil))
	for i, base := range []time.Duration{8 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 128 * ms} {
		if got := s.NextBackoff(); got < base/2 || got > base*3/2 {
			t.Fatalf("default backoff %d = %v, want %v ± 50%%", i+1, got, base)
		}
	}
}

// The line, script by script on a real server (the blocks are read off
// the grant lists): a release serves the waiter that arrived first however
// often the others attempted since; a waiter granted the key that does not
// attempt within its claim window is passed over, and keeps its place
// once it attempts again; a later waiter that finds the key free hands it
// to the one that arrived before it; a waiter that leaves passes on a key
// reserved for it; and nothing is left behind.
func TestLineScripts(t *testing.T) {
	srv := redistest.SharedServer(t, redistest.Redis)
	ctx := context.Background()
	rdb := srv.Client(t)
	key := redistest.Key(t, "lock")
	c, _ := handoff.Companions([]string{key})
	line, alive := c[1], c[2]
	// ids with a claim window of 50 ms, so that a lapse takes little time.
	id := func(name string) string { return name + ".50" }
	// attempt runs obtain.lua for waiter name ("" for no waiter), later
	// or first; it reports whether it obtained.
	attempt := func(name string, later bool) bool {
		t.Helper()
		keys, args := []string{key}, []any{name, "", 60000, "0"}
		if name != "" {
			mode := "1"
			if later {
				mode = "0"
			}
			keys = append(keys, line, alive)
			args = append(args, id(name), handoff.RegistrationArg, mode)
		}
		v, err := obtainScript.Run(ctx, rdb, keys, args...).Result()
		if err != nil {
			t.Fatal(err)
		}
		n, ok := v.(int64)
		return ok && n != obtainHeld
	}
	release := func(token string) {
		t.Helper()
		if err := releaseScript.Run(ctx, rdb, c, token).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// granted reports whether a grant waits on name's grant list.
	granted := func(name string) bool {
		return rdb.LLen(ctx, handoff.GrantList(line, id(name))).Val() > 0
	}
	reservedFor := func(name string) bool {
		v := rdb.Get(ctx, key).Val()
		return strings.HasPrefix(v, strconv.Itoa(len(id(name))+1)+":~"+id(name)+":")
	}

	if !attempt("h", false) {
		t.Fatal("h did not obtain the free key")
	}
	for _, name := range []string{"A", "B", "C"} {
		// Arrivals in one microsecond would keep the order of the ids.
		if attempt(name, false) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	// B and C attempt again (their blocks ended) after A: no place changes.
	for _, name := range []string{"C", "B", "C", "B"} {
		if attempt(name, true) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	release("h")
	if !reservedFor("A") || !granted("A") || granted("B") || granted("C") {
		t.Fatalf("after h's release: the key is %q; grants A %v, B %v, C %v; want A served", rdb.Get(ctx, key).Val(), granted("A"), granted("B"), granted("C"))
	}
	if attempt("B", true) {
		t.Fatal("B took a key reserved for A")
	}
	// A does not answer within its claim window: the key expires with it.
	for rdb.Exists(ctx, key).Val() == 1 {
		time.Sleep(5 * time.Millisecond)
	}
	// B's next attempt finds the key free, and A out of the line (its
	// lapse ended with the window): B takes it.
	if !attempt("B", true) {
		t.Fatal("B did not take the key that A left to expire")
	}
	// A comes back: registered again; C arrived before A's new entry but
	// after its old one, which the lapse dropped.
	if attempt("A", true) {
		t.Fatal("A obtained a held key")
	}
	release("B")
	if !reservedFor("C") {
		t.Fatalf("after B's release the key is %q, want it reserved for C (A lost its place)", rdb.Get(ctx, key).Val())
	}
	if !attempt("C", true) {
		t.Fatal("C did not take the key reserved for it")
	}
	// C's key expires without a release (C died holding it): A finds it
	// free and takes it; no one else is in line.
	rdb.PExpire(ctx, key, time.Millisecond)
	for rdb.Exists(ctx, key).Val() == 1 {
		time.Sleep(time.Millisecond)
	}
	// A first attempt takes a free key, as any Obtain does; its release
	// serves A.
	if !attempt("D", false) {
		t.Fatal("D's first attempt did not take the free key")
	}
	release("D")
	if !reservedFor("A") || !attempt("A", true) {
		t.Fatalf("after D's release the key is %q, want A served", rdb.Get(ctx, key).Val())
	}
	// E and F wait; the key expires; F attempts first and hands it to E.
	for _, name := range []string{"E", "F"} {
		if attempt(name, false) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	rdb.PExpire(ctx, key, time.Millisecond)
	for rdb.Exists(ctx, key).Val() == 1 {
		time.Sleep(time.Millisecond)
	}
	if attempt("F", true) {
		t.Fatal("F took the free key ahead of E, which arrived first")
	}
	if !reservedFor("E") || !granted("E") {
		t.Fatalf("after F's attempt the key is %q, want it reserved for E", rdb.Get(ctx, key).Val())
	}
	// E gives up: the key goes on to F.
	if err := leaveScript.Run(ctx, rdb, c, id("E")).Err(); err != nil {
		t.Fatal(err)
	}
	if !reservedFor("F") || !attempt("F", true) {
		t.Fatalf("after E left the key is %q, want F served", rdb.Get(ctx, key).Val())
	}
	release("F")
	for _, k := range []string{key, line, alive} {
		if n := rdb.Exists(ctx, k).Val(); n != 0 && k == key {
			t.Errorf("%s left behind", k)
		}
		if ttl := rdb.PTTL(ctx, k).Val(); ttl == -1 {
			t.Errorf("%s has no expiry", k)
		}
	}
}
