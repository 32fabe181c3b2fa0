// Command quickstart runs a job on one replica at a time: the program of the
// README's quick start, kept here so that it is compiled and run by the
// tests.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

func main() {
	addr := os.Getenv("REDIS_ADDR") // e.g. 127.0.0.1:6379
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	if err := run(context.Background(), addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	// Try once (the default RetryStrategy is NoRetry): if another replica
	// holds the lock, it is running the job, and this one skips it.
	lock, err := locker.Obtain(ctx, "report:daily", 30*time.Second, nil)
	if errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("another replica is running the report")
		return nil
	} else if err != nil {
		return err
	}
	defer func() {
		// Release stops the keep-alive, then deletes the key.
		if err := lock.Release(ctx); err != nil {
			log.Println("release:", err) // ErrLockNotHeld: it was lost meanwhile
		}
	}()

	// Keep the lock while the job runs, however long it takes, and cancel
	// the job's context the moment the lock is lost.
	ka, err := lock.KeepAlive(30*time.Second, nil)
	if err != nil {
		return err
	}
	jobCtx, cancel := ka.Context(ctx)
	defer cancel()

	if err := buildReport(jobCtx); err != nil {
		return err
	}
	fmt.Println("report built")
	return nil
}

// buildReport is the job: it stops when its context is cancelled.
func buildReport(ctx context.Context) error {
	select {
	case <-time.After(2 * time.Second): // the work
		return nil
	case <-ctx.Done():
		return context.Cause(ctx) // redislock.ErrLockLost: someone else may run it now
	}
}
