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

// Readers share the lock; a writer waits until they are gone, and new
// readers wait behind it.
func ExampleRWMutex() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()
	rw := redislock.New(rdb).RWMutex("example:catalog")

	r1, err := rw.RLock(ctx, time.Second, nil)
	if err != nil {
		log.Fatalln(err)
	}
	r2, err := rw.RLock(ctx, time.Second, nil)
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("two readers hold the lock")

	// A writer that does not wait is turned away while readers hold.
	if _, err := rw.Lock(ctx, time.Second, nil); errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("writer:", err)
	}
	_ = r1.Release(ctx)
	_ = r2.Release(ctx)

	w, err := rw.Lock(ctx, time.Second, &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
	if err != nil {
		log.Fatalln(err)
	}
	defer func() { _ = w.Release(ctx) }()
	if _, err := rw.RLock(ctx, time.Second, nil); errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("reader while the writer holds:", err)
	}
	// Output:
	// two readers hold the lock
	// writer: redislock: not obtained
	// reader while the writer holds: redislock: not obtained
}

// Fence tokens: each write lock gets a token above all before; each read
// hold carries the token of the last write, so the protected store can
// refuse writes older than the newest it has seen, and answers read with
// an older token than the data they would see.
func ExampleRWMutex_fencing() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()
	rw := redislock.New(rdb).RWMutex("example:fenced")
	opt := &redislock.Options{FenceKey: "{example:fenced}:fence"}

	w1, err := rw.Lock(ctx, time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	_ = w1.Release(ctx)
	r, err := rw.RLock(ctx, time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("reader follows the first write:", r.FenceToken() == w1.FenceToken())
	_ = r.Release(ctx)

	w2, err := rw.Lock(ctx, time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	defer func() { _ = w2.Release(ctx) }()
	fmt.Println("second write's token is higher:", w2.FenceToken() > w1.FenceToken())
	fmt.Println("the reader's data is stale now:", r.FenceToken() < w2.FenceToken())
	// Output:
	// reader follows the first write: true
	// second write's token is higher: true
	// the reader's data is stale now: true
}

// Downgrade: write, then keep reading what was written, with no writer in
// between.
func ExampleWriteLock_Downgrade() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()
	rw := redislock.New(rdb).RWMutex("example:downgrade")

	w, err := rw.Lock(ctx, time.Second, nil)
	if err != nil {
		log.Fatalln(err)
	}
	// ... rebuild the cache ...
	r, err := w.Downgrade(ctx, time.Second)
	if err != nil {
		log.Fatalln(err)
	}
	defer func() { _ = r.Release(ctx) }()
	// ... serve from it; other readers may join, no writer can ...
	if _, err := rw.Lock(ctx, time.Second, nil); errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("no writer while the downgraded hold lasts")
	}
	// A read hold is never upgraded.
	if _, err := rw.Lock(ctx, time.Second, &redislock.Options{Token: r.Token()}); errors.Is(err, redislock.ErrUpgrade) {
		fmt.Println("upgrade refused")
	}
	// Output:
	// no writer while the downgraded hold lasts
	// upgrade refused
}

// With WaitForRelease, a writer waiting behind readers is handed the lock
// by the last of them to leave, and readers waiting behind a writer are
// woken together when it leaves.
func ExampleRWMutex_waitForRelease() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()
	rw := redislock.New(rdb).RWMutex("example:report")
	wait := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}

	r, err := rw.RLock(ctx, time.Second, nil)
	if err != nil {
		log.Fatalln(err)
	}
	done := make(chan *redislock.WriteLock)
	go func() {
		w, err := rw.Lock(ctx, time.Second, wait) // waits for the reader
		if err != nil {
			log.Fatalln(err)
		}
		done <- w
	}()
	time.Sleep(50 * time.Millisecond) // let the writer start waiting (not needed for the outcome)
	_ = r.Release(ctx)                // hands the lock over to the waiting writer
	w := <-done
	fmt.Println("the writer has the lock once the reader left")
	_ = w.Release(ctx)
	// Output:
	// the writer has the lock once the reader left
}
