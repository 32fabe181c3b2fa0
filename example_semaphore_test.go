package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// At most two encoders at once: a third caller is turned away until a
// permit is released (or expires).
func ExampleClient_Semaphore() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()

	sem := redislock.New(rdb).Semaphore("example:encode", 2)
	a, err := sem.Acquire(ctx, 30*time.Second, &redislock.Options{Metadata: "encoder-a"})
	if err != nil {
		log.Fatalln(err)
	}
	b, err := sem.Acquire(ctx, 30*time.Second, &redislock.Options{Metadata: "encoder-b"})
	if err != nil {
		log.Fatalln(err)
	}
	if _, err := sem.Acquire(ctx, 30*time.Second, nil); errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("third encoder:", err)
	}
	holders, err := sem.Holders(ctx)
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println(len(holders), "permits held")

	_ = a.Release(ctx)
	c, err := sem.Acquire(ctx, 30*time.Second, &redislock.Options{Metadata: "encoder-c"})
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("after a release:", c.Metadata())
	_ = b.Release(ctx)
	_ = c.Release(ctx)
	// Output:
	// third encoder: redislock: not obtained
	// 2 permits held
	// after a release: encoder-c
}

// Wait for a permit (a release hands it to the caller that has waited
// longest), keep it alive while the work runs, and stamp the work with the
// permit's fencing token.
func ExampleSemaphore_Acquire() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()

	sem := redislock.New(rdb).Semaphore("{example:partner-api}:calls", 10)
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := sem.Acquire(wctx, 10*time.Second, &redislock.Options{
		RetryStrategy: redislock.WaitForRelease(nil),
		FenceKey:      "{example:partner-api}:fence",
	})
	if err != nil {
		log.Fatalln(err)
	}
	defer func() { _ = p.Release(ctx) }() // an expired permit needs no release
	ka, err := p.KeepAlive(10*time.Second, nil)
	if err != nil {
		log.Fatalln(err)
	}
	work, done := ka.Context(ctx) // cancelled if the permit is lost
	defer done()
	_ = work
	fmt.Println("fenced:", p.FenceToken() > 0)
	// Output:
	// fenced: true
}
