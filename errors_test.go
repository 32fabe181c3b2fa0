package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// replyClient wraps a real client at the client boundary and answers every
// script call with reply instead of sending it: a proxy or a wrapper that
// changed what Redis said.
type replyClient struct {
	redis.Scripter
	reply any
}

func (c replyClient) answer(context.Context) *redis.Cmd {
	return redis.NewCmdResult(c.reply, nil)
}

func (c replyClient) Eval(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return c.answer(ctx)
}

func (c replyClient) EvalSha(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return c.answer(ctx)
}

func (c replyClient) EvalRO(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return c.answer(ctx)
}

func (c replyClient) EvalShaRO(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return c.answer(ctx)
}

// Replies that inspect.lua never gives are reported as ErrUnexpectedReply.
func TestInspectUnexpectedReply(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "job")
	for _, reply := range []any{
		int64(5),
		"OK",
		[]any{"not a pttl"},
		[]any{int64(1000), int64(7)},
		[]any{int64(1000), "v", "extra"},
	} {
		info, err := redislock.New(replyClient{rdb, reply}).Inspect(context.Background(), key)
		if !errors.Is(err, redislock.ErrUnexpectedReply) || info != nil {
			t.Errorf("Inspect answered %#v: got %+v, %v; want nil, ErrUnexpectedReply", reply, info, err)
		}
	}
}

// A TTL reply that ttl.lua never gives is reported as ErrUnexpectedReply.
func TestTTLUnexpectedReply(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	lock, err := redislock.Obtain(context.Background(), rdb, redistest.Key(t, "job"), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Release(context.Background()) }()
	for _, reply := range []any{"OK", int64(-1), []any{int64(1)}} {
		attached, err := redislock.New(replyClient{rdb, reply}).Attach(lock.Keys(), lock.Token(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if ttl, err := attached.TTL(context.Background()); !errors.Is(err, redislock.ErrUnexpectedReply) || ttl != 0 {
			t.Errorf("TTL answered %#v: got %v, %v; want 0, ErrUnexpectedReply", reply, ttl, err)
		}
	}
}
