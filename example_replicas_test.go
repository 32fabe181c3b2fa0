package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// MinReplicas confirms each obtain on replicas (Redis WAIT) before the lock
// is returned, which narrows the window in which a failover loses a lock.
// When too few replicas acknowledge it in time, the lock is given back and
// the call fails.
func ExampleOptions_minReplicas() {
	ctx := context.Background()
	opt := &redislock.Options{MinReplicas: 1, ReplicaTimeout: time.Second}

	// A master with one replica.
	rdb := redis.NewClient(&redis.Options{Addr: primaryAddr()})
	defer rdb.Close()
	lock, err := redislock.Obtain(ctx, rdb, "example:replicated", 10*time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	defer lock.Release(ctx)
	fmt.Println("obtained, and on a replica")

	// A server without replicas: nobody acknowledges, nothing stays held.
	solo := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer solo.Close()
	_, err = redislock.Obtain(ctx, solo, "example:replicated", 10*time.Second, &redislock.Options{
		MinReplicas:    1,
		ReplicaTimeout: 50 * time.Millisecond,
	})
	var rerr *redislock.ReplicaError
	if errors.As(err, &rerr) {
		fmt.Printf("not obtained: %d of %d replicas acknowledged\n", rerr.Got, rerr.Want)
	}
	info, err := redislock.New(solo).Inspect(ctx, "example:replicated")
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("held on the server without replicas:", info.Held)
	// Output:
	// obtained, and on a replica
	// not obtained: 0 of 1 replicas acknowledged
	// held on the server without replicas: false
}

// primaryAddr returns the address of a master with one replica: in your
// code, your master's (or use a Sentinel failover client). Here the test
// harness starts one, on first use.
func primaryAddr() string {
	addr, err := redistest.SharedPrimaryAddr(redistest.Redis)
	if err != nil {
		log.Fatalln("starting a master with a replica:", err)
	}
	return addr
}
