package script_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
	"github.com/redislock/redislock/internal/script"
)

// recorder is a go-redis hook that records every script command the client
// processes: its arguments, each with its type.
type recorder struct {
	mu   sync.Mutex
	cmds []string
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.HasPrefix(cmd.Name(), "eval") {
			var b strings.Builder
			for _, a := range cmd.Args() {
				fmt.Fprintf(&b, "%T(%v) ", a, a)
			}
			r.mu.Lock()
			r.cmds = append(r.cmds, b.String())
			r.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// take returns the commands recorded since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	cmds := r.cmds
	r.cmds = nil
	return cmds
}

// marshaled is an argument that go-redis writes as its bytes.
type marshaled string

func (m marshaled) MarshalBinary() ([]byte, error) { return []byte(m), nil }

// On the go-redis client types, Run and RunRO build the commands of EVALSHA
// and EVAL themselves: the client's hooks see exactly what go-redis's own
// Script.Run and RunRO send, argument for argument, after SCRIPT FLUSH and
// with the script cached, and the replies are the same.
func TestRunSendsWhatGoRedisSends(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			rdb := tp.NewClient(t)
			rec := new(recorder)
			rdb.AddHook(rec)
			ctx := context.Background()
			key := redistest.Key(t, "k")
			src := "return {KEYS[1], ARGV[1], ARGV[2], ARGV[3]}"
			ours, theirs := script.New(src), redis.NewScript(src)
			args := []any{"s", int64(42), marshaled("m")}
			if !script.Direct(rdb, args...) {
				t.Fatalf("Run does not build the command for a %T", rdb)
			}
			type run struct {
				name string
				ours func() *redis.Cmd
				them func() *redis.Cmd
			}
			for _, r := range []run{
				{"Run", func() *redis.Cmd { return ours.Run(ctx, rdb, []string{key}, args...) },
					func() *redis.Cmd { return theirs.Run(ctx, rdb, []string{key}, args...) }},
				{"RunRO", func() *redis.Cmd { return ours.RunRO(ctx, rdb, []string{key}, args...) },
					func() *redis.Cmd { return theirs.RunRO(ctx, rdb, []string{key}, args...) }},
			} {
				for _, cached := range []bool{false, true} {
					if !cached {
						flush(t, rdb)
					}
					got, gotErr := r.ours().Result()
					sent := rec.take()
					if !cached {
						flush(t, rdb)
					}
					want, wantErr := r.them().Result()
					wantSent := rec.take()
					if fmt.Sprint(got, gotErr) != fmt.Sprint(want, wantErr) {
						t.Errorf("%s, cached %v: reply %v, %v; go-redis's %v, %v", r.name, cached, got, gotErr, want, wantErr)
					}
					if fmt.Sprint(sent) != fmt.Sprint(wantSent) || len(sent) != 2-btoi(cached) {
						t.Errorf("%s, cached %v: sent\n%q\ngo-redis sends\n%q", r.name, cached, sent, wantSent)
					}
				}
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A Scripter of the caller's own has its EvalSha and Eval called, though it
// embeds a go-redis client; so has a go-redis client given one argument
// that go-redis spreads (a slice).
func TestRunCallsOwnEvalSha(t *testing.T) {
	t.Parallel()
	tp := redistest.Topologies()[0]
	rdb, ok := tp.NewClient(t).(*redis.Client)
	if !ok {
		t.Skipf("topology %s has no *redis.Client", tp.Name)
	}
	w := &wrapped{Client: rdb}
	ctx := context.Background()
	key := redistest.Key(t, "n")
	if script.Direct(w, "a") {
		t.Fatal("Run would build the command for a wrapper")
	}
	if got, err := echo.Run(ctx, w, []string{key}, "ab").Text(); err != nil || got != "abab" {
		t.Fatalf("Run through a wrapper = %q, %v; want \"abab\"", got, err)
	}
	if w.calls != 1 {
		t.Fatalf("the wrapper's EvalSha ran %d times, want 1", w.calls)
	}
	if script.Direct(rdb, []string{"a", "b"}) {
		t.Fatal("Run would build the command of an argument that go-redis spreads")
	}
	if got, err := echo.Run(ctx, rdb, []string{key}, []string{"cd"}).Text(); err != nil || got != "cdcd" {
		t.Fatalf("Run of a spread argument = %q, %v; want \"cdcd\"", got, err)
	}
}

// wrapped is a Scripter of a caller's own, counting its EvalSha calls.
type wrapped struct {
	*redis.Client
	calls int
}

func (w *wrapped) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	w.calls++
	return w.Client.EvalSha(ctx, sha, keys, args...)
}

// Built here, a script command costs two allocations less than through
// go-redis's Script.Run: the hash is boxed once per Script, and the
// command's name is a constant.
func TestRunAllocations(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Redis)
	rdb := srv.Client(t)
	ctx := context.Background()
	keys := []string{redistest.Key(t, "k")}
	src := "return 1"
	ours, theirs := script.New(src), redis.NewScript(src)
	if err := ours.Run(ctx, rdb, keys, "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	// The least of three counts each: another goroutine's allocations
	// during a count (the harness's, under load) can only add to it.
	got, want := math.Inf(1), math.Inf(1)
	for range 3 {
		got = min(got, testing.AllocsPerRun(100, func() { _ = ours.Run(ctx, rdb, keys, "a", "b") }))
		want = min(want, testing.AllocsPerRun(100, func() { _ = theirs.Run(ctx, rdb, keys, "a", "b") }))
	}
	if got > want-1.5 {
		t.Fatalf("Run: %.1f allocations, go-redis's Script.Run %.1f; want two fewer", got, want)
	}
	t.Logf("Run: %.1f allocations, go-redis's Script.Run %.1f", got, want)
}
