package redislock_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// A Quorum holds each lock on a majority of independent masters, here
// three: one of them may fail, restart or be cut off and the lock is still
// held. With a FenceKey, every acquisition's fencing token is greater than
// every token handed out before it, whichever majority each one took.
func ExampleNewQuorum() {
	ctx := context.Background()
	var clients []redislock.RedisClient
	for _, addr := range quorumAddrs() {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		clients = append(clients, rdb)
	}
	q, err := redislock.NewQuorum(clients, nil)
	if err != nil {
		log.Fatalln(err)
	}

	opt := &redislock.Options{FenceKey: "example:quorum:fence"}
	lock, err := q.Obtain(ctx, "example:quorum", 10*time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	first := lock.FenceToken()
	fmt.Println("obtained, with a fencing token:", first > 0)

	// Another holder is refused while the majority holds it.
	if _, err := q.Obtain(ctx, "example:quorum", 10*time.Second, nil); err != nil {
		fmt.Println("a second obtain:", err)
	}

	// Kept alive on the masters until released; Done closes if the
	// majority is lost. Stamp each write to the resource with
	// lock.FenceToken(), and let the resource refuse lower ones.
	ka, err := lock.KeepAlive(10*time.Second, nil)
	if err != nil {
		log.Fatalln(err)
	}
	if err := lock.Release(ctx); err != nil {
		log.Fatalln(err)
	}
	fmt.Println("released; the keep-alive:", ka.Err())

	next, err := q.Obtain(ctx, "example:quorum", 10*time.Second, opt)
	if err != nil {
		log.Fatalln(err)
	}
	defer next.Release(ctx)
	fmt.Println("the next token is greater:", next.FenceToken() > first)
	// Output:
	// obtained, with a fencing token: true
	// a second obtain: redislock: not obtained
	// released; the keep-alive: redislock: keep-alive stopped
	// the next token is greater: true
}

// quorumAddrs returns the addresses of three independent masters: in your
// code, yours. Here the test harness starts them on first use, with
// appendonly yes and appendfsync always, so that each keeps its data
// across a restart (a master without persistence takes no lock for
// QuorumOptions.MaxTTL after it starts: docs/quorum.md).
func quorumAddrs() []string {
	addrs, err := redistest.SharedQuorumAddrs(redistest.Redis, 3, "--appendonly", "yes", "--appendfsync", "always")
	if err != nil {
		log.Fatalln("starting three masters:", err)
	}
	return addrs
}
