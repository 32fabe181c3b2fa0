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
	if err := run(context.Background(), os.Getenv("REDIS_ADDR")); err != nil {
		log.Fatal(err)
	}
}

// run runs the job, unless another replica holds its lock.
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
	defer func() { _ = lock.Release(ctx) }() // stops the keep-alive, then deletes the key

	// Keep the lock while the job runs, however long it takes; the job's
	// context is cancelled (cause ErrLockLost) the moment it is lost.
	ka, err := lock.KeepAlive(30*time.Second, nil)
	if err != nil {
		return err
	}
	jobCtx, cancel := ka.Context(ctx)
	defer cancel()
	select {
	case <-time.After(2 * time.Second): // the job
		fmt.Println("report built")
		return nil
	case <-jobCtx.Done():
		return context.Cause(jobCtx) // ErrLockLost: another replica may run it now
	}
}
