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

// A status tool or a cleanup job reads a lock without its token (Inspect),
// and releases it given the token (Attach), with the same ownership check
// as the holder's own handle.
func ExampleClient_Inspect() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	// Somewhere, a holder that crashed without releasing.
	_, err := locker.Obtain(ctx, "example:inspect", time.Minute, &redislock.Options{
		Metadata: "host-1:4242",
		FenceKey: "example:inspect:fence",
	})
	if err != nil {
		log.Fatalln(err)
	}

	// Elsewhere, the cleanup job.
	info, err := locker.Inspect(ctx, "example:inspect")
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("held:", info.Held, "by", info.Metadata, "fenced:", info.FenceToken > 0, "expires in a minute:", info.TTL > 50*time.Second)

	// A wrong token releases nothing.
	stranger, err := locker.Attach([]string{"example:inspect"}, "not-the-token", 0)
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("wrong token:", errors.Is(stranger.Release(ctx), redislock.ErrLockNotHeld))

	lock, err := locker.Attach([]string{info.Key}, info.Token, info.FenceToken)
	if err != nil {
		log.Fatalln(err)
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatalln(err)
	}
	info, err = locker.Inspect(ctx, "example:inspect")
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("held after release:", info.Held)
	// Output:
	// held: true by host-1:4242 fenced: true expires in a minute: true
	// wrong token: true
	// held after release: false
}

// A process that restarts while its job's lock is held takes the lock back
// with the token it kept (in a file, a job record), refreshes it and
// releases it when the job is done: Attach sends nothing, and every call
// of the Lock it returns checks the token as the holder's own would.
func ExampleClient_Attach() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	// Before the restart: the lock, and its token saved with the job.
	first, err := locker.Obtain(ctx, "example:attach", time.Minute, nil)
	if err != nil {
		log.Fatalln(err)
	}
	saved := first.Token()

	// After the restart: the same lock, from the saved token.
	lock, err := locker.Attach([]string{"example:attach"}, saved, 0)
	if err != nil {
		log.Fatalln(err)
	}
	if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
		log.Fatalln(err)
	}
	ttl, err := lock.TTL(ctx)
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("held again:", ttl > 50*time.Second)
	if err := lock.Release(ctx); err != nil {
		log.Fatalln(err)
	}
	// The handle from before the restart no longer holds anything.
	fmt.Println("old handle:", errors.Is(first.Release(ctx), redislock.ErrLockNotHeld))
	// Output:
	// held again: true
	// old handle: true
}
