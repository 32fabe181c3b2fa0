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

// redisAddr is the server the examples use: in your code, your server's
// address ("127.0.0.1:6379", say). Here TestMain (helpers_test.go) sets it
// to a redis-server that the test harness (internal/redistest) started on a
// free port, so the examples run with go test like any test.
var redisAddr string

func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	locker := redislock.New(rdb)
	lock, err := locker.Obtain(ctx, "example:basic", 100*time.Millisecond, &redislock.Options{Metadata: "worker-1"})
	if errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("someone else holds the lock")
		return
	} else if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx)
	fmt.Println("obtained by", lock.Metadata())

	// A second caller is turned away at once (the default is NoRetry).
	if _, err := locker.Obtain(ctx, "example:basic", time.Second, nil); errors.Is(err, redislock.ErrNotObtained) {
		fmt.Println("second caller:", err)
	}

	if ttl, err := lock.TTL(ctx); err == nil && ttl > 0 {
		fmt.Println("still held")
	}
	// Output:
	// obtained by worker-1
	// second caller: redislock: not obtained
	// still held
}

// Wait for a held lock: retry every 10ms, for up to 1 second (the context's
// deadline; without one the wait would end after the TTL).
func ExampleClient_Obtain_retry() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	first, err := locker.Obtain(ctx, "example:retry", 50*time.Millisecond, nil)
	if err != nil {
		log.Fatalln(err)
	}
	// The first holder never releases; its lease runs out after 50ms.
	_ = first

	waitCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	second, err := locker.Obtain(waitCtx, "example:retry", time.Second, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond),
	})
	if err != nil {
		log.Fatalln(err)
	}
	defer second.Release(ctx)
	fmt.Println("obtained once the first lease expired")

	// A bounded wait: at most 3 retries, 10ms, 20ms, 40ms apart.
	_, err = locker.Obtain(ctx, "example:retry", time.Second, &redislock.Options{
		RetryStrategy: redislock.LimitRetry(redislock.ExponentialBackoff(10*time.Millisecond, 40*time.Millisecond), 3),
	})
	fmt.Println(err)
	// Output:
	// obtained once the first lease expired
	// redislock: not obtained
}

// A holder that pauses past its lease (a GC pause, a stopped VM) and then
// writes is refused by a resource that checks fence tokens.
func ExampleLock_FenceToken() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)
	opt := &redislock.Options{FenceKey: "example:fencing:fence"}

	// The protected resource remembers the highest token it accepted.
	var highest int64
	write := func(token int64, what string) {
		if token < highest {
			fmt.Println("refused", what, "(stale token)")
			return
		}
		highest = token
		fmt.Println("accepted", what)
	}

	slow, err := locker.Obtain(ctx, "example:fencing", 50*time.Millisecond, opt)
	if err != nil {
		log.Fatalln(err)
	}
	time.Sleep(100 * time.Millisecond) // slow pauses; its lease expires

	fast, err := locker.Obtain(ctx, "example:fencing", time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	defer fast.Release(ctx)
	write(fast.FenceToken(), "fast's write")
	write(slow.FenceToken(), "slow's write") // slow wakes up and writes
	// Output:
	// accepted fast's write
	// refused slow's write (stale token)
}

// Keep a lock for as long as the work takes, and stop the work the moment
// the lock is lost: the recommended pattern.
func ExampleLock_KeepAlive() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	const ttl = time.Second
	lock, err := redislock.Obtain(ctx, rdb, "example:keepalive", ttl, nil)
	if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx) // stops the keep-alive first

	ka, err := lock.KeepAlive(ttl, nil) // refreshes every ttl/3
	if err != nil {
		log.Fatalln(err)
	}
	work, cancel := ka.Context(ctx) // cancelled the moment the lock is lost
	defer cancel()

	// The work outlives the TTL and keeps the lock.
	select {
	case <-work.Done():
		fmt.Println("lock lost:", context.Cause(work))
		return
	case <-time.After(ttl + ttl/2):
		left, err := lock.TTL(ctx)
		fmt.Println("past the TTL, lock still held:", err == nil && left > 0)
	}

	// Someone deletes the key: the next refresh finds it gone, and the
	// work's context says why it ended.
	rdb.Del(ctx, "example:keepalive")
	<-work.Done()
	fmt.Println(errors.Is(context.Cause(work), redislock.ErrLockLost))
	fmt.Println(context.Cause(work))
	// Output:
	// past the TTL, lock still held: true
	// true
	// redislock: lock lost: a refresh found it expired or held by another token
}

// Refresh between the steps of a long job, and stop at the first refresh
// that fails: from then on the lock may be someone else's. Lock.KeepAlive
// does this in the background, and also signals a loss while Redis hangs.
func ExampleLock_Refresh() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	const ttl = 5 * time.Second // far longer than one step of the job
	lock, err := redislock.Obtain(ctx, rdb, "example:refresh", ttl, nil)
	if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx)

	for step := 1; step <= 3; step++ {
		// ... one step of the job ...
		if step == 3 {
			rdb.Del(ctx, "example:refresh") // the lock is lost meanwhile (expired, or an operator deleted it)
		}
		if err := lock.Refresh(ctx, ttl, nil); err != nil {
			fmt.Printf("step %d: %v: stop\n", step, err)
			break
		}
		if left, err := lock.TTL(ctx); err == nil && left > 0 {
			fmt.Printf("step %d: done, lock still held\n", step)
		}
	}
	// Output:
	// step 1: done, lock still held
	// step 2: done, lock still held
	// step 3: redislock: not obtained: stop
}

// Wait longer than the TTL: the caller's deadline replaces the default
// bound of one TTL.
func ExampleClient_Obtain_deadline() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	holder, err := locker.Obtain(ctx, "example:deadline", time.Minute, nil)
	if err != nil {
		log.Fatalln(err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond) // the holder's work
		_ = holder.Release(ctx)
	}()

	// The TTL is 50ms, but we are prepared to wait up to 2 seconds.
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	lock, err := locker.Obtain(waitCtx, "example:deadline", 50*time.Millisecond, &redislock.Options{
		RetryStrategy: redislock.ExponentialBackoff(5*time.Millisecond, 50*time.Millisecond),
	})
	if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx)
	fmt.Println("obtained after the holder released")
	// Output:
	// obtained after the holder released
}
