package script_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
	"github.com/redislock/redislock/internal/script"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// echo returns its key and first argument, and counts its runs in the key.
var echo = script.New(
	"local function twice(s) return s .. s end",
	"redis.call('INCR', KEYS[1]) return twice(ARGV[1])",
)

// flush empties the script cache of every node a client can reach, so that
// the next EVALSHA answers NOSCRIPT.
func flush(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	var err error
	if c, ok := rdb.(*redis.ClusterClient); ok {
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { return n.ScriptFlush(ctx).Err() })
	} else {
		err = rdb.ScriptFlush(ctx).Err()
	}
	if err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
}

func TestRunLoadsAfterNoScript(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			rdb := tp.NewClient(t)
			ctx := context.Background()
			key := redistest.Key(t, "n")
			for i := range 2 {
				flush(t, rdb)
				got, err := echo.Run(ctx, rdb, []string{key}, "ab").Text()
				if err != nil || got != "abab" {
					t.Fatalf("run %d after SCRIPT FLUSH: got %q, %v; want \"abab\"", i, got, err)
				}
				// Cached now on the node of the key: EVALSHA answers.
				var node redis.Scripter = rdb
				if c, ok := rdb.(*redis.ClusterClient); ok {
					n, err := c.MasterForKey(ctx, key)
					if err != nil {
						t.Fatal(err)
					}
					node = n
				}
				if ok, err := node.ScriptExists(ctx, echo.Hash()).Result(); err != nil || !ok[0] {
					t.Fatalf("SCRIPT EXISTS after Run: %v, %v", ok, err)
				}
			}
			if n, err := rdb.Get(ctx, key).Int(); err != nil || n != 2 {
				t.Fatalf("script ran %d times (%v), want 2: once per Run, no run lost or doubled", n, err)
			}
		})
	}
}

func TestRunRO(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			rdb := tp.NewClient(t)
			ctx := context.Background()
			key := redistest.Key(t, "k")
			if err := rdb.Set(ctx, key, "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			read := script.New("return redis.call('GET', KEYS[1])")
			flush(t, rdb)
			if got, err := read.RunRO(ctx, rdb, []string{key}).Text(); err != nil || got != "v" {
				t.Fatalf("RunRO after SCRIPT FLUSH = %q, %v; want \"v\"", got, err)
			}
			// The read-only variant refuses to write.
			if err := echo.RunRO(ctx, rdb, []string{key}, "x").Err(); err == nil {
				t.Fatalf("RunRO of a writing script succeeded; want the server's refusal")
			}
		})
	}
}

// A script queued in a pipeline after SCRIPT FLUSH answers NOSCRIPT; Settle
// runs it with EVAL, once.
func TestQueueSettle(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			rdb := tp.NewClient(t)
			ctx := context.Background()
			key := redistest.Key(t, "n")
			for _, cached := range []bool{false, true} {
				if !cached {
					flush(t, rdb)
				}
				pipe := rdb.Pipeline()
				queued := echo.Queue(ctx, pipe, []string{key}, "cd")
				_, _ = pipe.Exec(ctx) // the outcome is in queued
				if cached != (queued.Err() == nil) {
					t.Fatalf("cached %v: queued EVALSHA error %v", cached, queued.Err())
				}
				if !cached && !script.IsNoScript(queued.Err()) {
					t.Fatalf("queued EVALSHA after SCRIPT FLUSH: %v, want NOSCRIPT", queued.Err())
				}
				got, err := echo.Settle(ctx, rdb, queued, []string{key}, "cd").Text()
				if err != nil || got != "cdcd" {
					t.Fatalf("cached %v: Settle = %q, %v; want \"cdcd\"", cached, got, err)
				}
			}
			if n, err := rdb.Get(ctx, key).Int(); err != nil || n != 2 {
				t.Fatalf("script ran %d times (%v), want 2", n, err)
			}
			// QueueEval sends the whole source: no NOSCRIPT possible.
			flush(t, rdb)
			pipe := rdb.Pipeline()
			whole := echo.QueueEval(ctx, pipe, []string{key}, "e")
			_, _ = pipe.Exec(ctx)
			if got, err := whole.Text(); err != nil || got != "ee" {
				t.Fatalf("QueueEval after SCRIPT FLUSH = %q, %v; want \"ee\"", got, err)
			}
		})
	}
}

func TestIsNoScript(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.ErrNoScript, true},
		{fmt.Errorf("wrapped: %w", redis.ErrNoScript), true},
		{errors.New("NOSCRIPT No matching script. Please use EVAL."), false}, // not a server reply
		{redis.Nil, false},
		{context.Canceled, false},
	}
	for _, tt := range tests {
		if got := script.IsNoScript(tt.err); got != tt.want {
			t.Errorf("IsNoScript(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// replyError is an error reply as go-redis gives it (redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

func TestTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), true},
		{replyError("LOADING Redis is loading the dataset in memory"), true},
		{replyError("READONLY You can't write against a read only replica."), true},
		{replyError("CLUSTERDOWN The cluster is down"), true},
		{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{replyError("MASTERDOWN Link with MASTER is down"), true},
		{replyError("BUSY Redis is busy running a script."), true},
		{replyError("ERR Error running script (call to f_x): @user_script:1: -READONLY You can't write"), true},
		{replyError("NOPERM this user has no permissions"), false},
		{replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{replyError("ERR redislock: fence key k does not hold an integer"), false},
		{context.Canceled, false},
		{fmt.Errorf("op: %w", context.DeadlineExceeded), false},
		{redis.ErrClosed, false},
	}
	for _, tt := range tests {
		if got := script.Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// An ACL that allows EVALSHA and EVAL but not their read-only forms (the
// minimal lock ACL of the README) still runs read-only scripts: RunRO falls
// back to Run.
func TestRunROWithoutROCommands(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Redis)
	admin := srv.Client(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "plain", "on", ">plain", "resetchannels", "-@all", "~*", "+evalsha", "+eval", "+get").Err(); err != nil {
		t.Fatal(err)
	}
	o := srv.Options()
	o.Username, o.Password = "plain", "plain"
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() })
	if err := admin.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	read := script.New("return redis.call('GET', KEYS[1])")
	if err := rdb.EvalShaRO(ctx, read.Hash(), []string{"k"}).Err(); !redis.HasErrorPrefix(err, "NOPERM") {
		t.Fatalf("EVALSHA_RO for the user: %v, want NOPERM (the test's premise)", err)
	}
	if got, err := read.RunRO(ctx, rdb, []string{"k"}).Text(); err != nil || got != "v" {
		t.Fatalf("RunRO without the _RO commands = %q, %v; want \"v\"", got, err)
	}
}
