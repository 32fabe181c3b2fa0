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

// A service that owns many things at once keeps all their locks alive
// from one session: one goroutine, and one round trip per Redis node for
// the locks due at about the same time, instead of a keep-alive each.
// Each lock still says on its own when it is lost.
func ExampleClient_Session() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	sess, err := locker.Session(300*time.Millisecond, nil)
	if err != nil {
		log.Fatalln(err)
	}
	defer sess.Close()

	kept := map[string]*redislock.KeepAlive{}
	for _, tenant := range []string{"acme", "globex", "initech"} {
		_, ka, err := sess.Obtain(ctx, "example:session:"+tenant, nil)
		if err != nil {
			log.Fatalln(err)
		}
		kept[tenant] = ka
	}

	time.Sleep(time.Second) // the work: more than three TTLs
	for _, tenant := range []string{"acme", "globex", "initech"} {
		fmt.Println(tenant, "held:", kept[tenant].Err() == nil)
	}

	// One lock taken away: its keep-alive alone says so.
	rdb.Del(ctx, "example:session:globex")
	<-kept["globex"].Done()
	fmt.Println("globex lost:", errors.Is(kept["globex"].Err(), redislock.ErrLockLost))
	fmt.Println("acme held:", kept["acme"].Err() == nil)

	// Release every lock still held, in one round trip.
	if err := sess.Release(ctx); err != nil {
		log.Fatalln(err)
	}
	n, _ := rdb.Exists(ctx, "example:session:acme", "example:session:initech").Result()
	fmt.Println("keys left:", n)
	// Output:
	// acme held: true
	// globex held: true
	// initech held: true
	// globex lost: true
	// acme held: true
	// keys left: 0
}

// Permits, read and write holds are added to a session once taken, for
// the session's TTL; a leadership is campaigned for through it.
func ExampleSession_Add() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)
	const ttl = time.Second
	sess, err := locker.Session(ttl, nil)
	if err != nil {
		log.Fatalln(err)
	}
	defer sess.Close()

	permit, err := locker.Semaphore("example:session:pool", 4).Acquire(ctx, ttl, nil)
	if err != nil {
		log.Fatalln(err)
	}
	ka, err := sess.Add(permit)
	if err != nil {
		_ = permit.Release(ctx)
		log.Fatalln(err)
	}
	workCtx, cancel := ka.Context(ctx) // cancelled if the permit is lost
	defer cancel()

	lead, err := sess.Campaign(workCtx, locker.Election("example:session:leader"), "node-1")
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("leading term", lead.Term() > 0)

	if err := sess.Release(ctx); err != nil { // the permit and the leadership
		log.Fatalln(err)
	}
	fmt.Println("permit:", ka.Err())
	// Output:
	// leading term true
	// permit: redislock: keep-alive stopped
}
