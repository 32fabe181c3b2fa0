package redislock_test

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// Workers that take one lock in turns: with WaitForRelease a waiter blocks
// on Redis, and each Release hands the lock to the worker that has waited
// longest, so every worker gets its share. Each worker has a client of its
// own, as separate processes would.
func ExampleWaitForRelease() {
	ctx := context.Background()
	opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}

	var (
		mu    sync.Mutex
		turns = map[string]int{}
		wg    sync.WaitGroup
	)
	for _, name := range []string{"worker-1", "worker-2", "worker-3"} {
		wg.Go(func() {
			rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
			defer rdb.Close()
			locker := redislock.New(rdb)
			for range 3 {
				// The context bounds the wait; without a deadline it would
				// end after one TTL.
				waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				lock, err := locker.Obtain(waitCtx, "example:turns", time.Second, opt)
				cancel()
				if err != nil {
					log.Fatalln(name, err)
				}
				mu.Lock()
				turns[name]++
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // the work the lock protects
				if err := lock.Release(ctx); err != nil {
					log.Fatalln(name, err)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println(turns)
	// Output:
	// map[worker-1:3 worker-2:3 worker-3:3]
}

// A waiter that waits for the holder's Release rather than polling: it gets
// the lock as the holder lets go of it.
func ExampleWaitForRelease_handover() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	holder, err := locker.Obtain(ctx, "example:handover", time.Minute, nil)
	if err != nil {
		log.Fatalln(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond) // the holder's work
		_ = holder.Release(ctx)
	}()

	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lock, err := locker.Obtain(waitCtx, "example:handover", time.Minute, &redislock.Options{
		// The fallback (nil: the default) polls when the client or server
		// cannot block, e.g. a server without BLMOVE (Redis before 6.2).
		RetryStrategy: redislock.WaitForRelease(nil),
	})
	if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx)
	fmt.Println("obtained when the holder released it")
	// Output:
	// obtained when the holder released it
}

// Jitter spreads each backoff of a strategy, here ±25% of 100ms, so that
// waiters that started together do not retry in lockstep.
func ExampleJitter() {
	s := redislock.Jitter(redislock.LinearBackoff(100*time.Millisecond), 0.25)
	for range 3 {
		d := s.NextBackoff()
		fmt.Println(d >= 75*time.Millisecond && d <= 125*time.Millisecond)
	}
	// In an Obtain: &redislock.Options{RetryStrategy: s}

	// Output:
	// true
	// true
	// true
}

// FullJitter waits a random time between zero and each backoff: with an
// exponential backoff the waits stay short on average while their spread
// grows.
func ExampleFullJitter() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	holder, err := locker.Obtain(ctx, "example:fulljitter", 100*time.Millisecond, nil)
	if err != nil {
		log.Fatalln(err)
	}
	_ = holder // never released: its lease runs out after 100ms

	waitCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lock, err := locker.Obtain(waitCtx, "example:fulljitter", time.Second, &redislock.Options{
		RetryStrategy: redislock.FullJitter(redislock.ExponentialBackoff(time.Millisecond, 50*time.Millisecond)),
	})
	if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx)
	fmt.Println("obtained once the first lease ran out")
	// Output:
	// obtained once the first lease ran out
}

// DecorrelatedJitter is an exponential backoff whose every wait is drawn
// between min and three times the previous one, capped at max. Each Obtain
// starts its own sequence from min.
func ExampleDecorrelatedJitter() {
	s := redislock.DecorrelatedJitter(10*time.Millisecond, 200*time.Millisecond)
	first := s.NextBackoff()
	fmt.Println("first:", first)
	inRange := true
	for range 10 {
		d := s.NextBackoff()
		inRange = inRange && d >= 10*time.Millisecond && d <= 200*time.Millisecond
	}
	fmt.Println("then between 10ms and 200ms:", inRange)
	// In an Obtain: &redislock.Options{RetryStrategy: s}

	// Output:
	// first: 10ms
	// then between 10ms and 200ms: true
}
