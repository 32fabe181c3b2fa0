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

func ExampleElection_Campaign() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()

	e := redislock.New(rdb).Election("example:scheduler")
	lead, err := e.Campaign(ctx, "node-7", 10*time.Second) // blocks until elected
	if err != nil {
		log.Fatalln(err)
	}
	defer func() { _ = lead.Resign(ctx) }() // idempotent: a no-op after the Resign below

	// Work under the leadership's context: it is cancelled, with
	// ErrLockLost as its cause, if the leadership is lost.
	work, cancel := lead.Context(ctx)
	defer cancel()
	_ = work

	if err := lead.Proclaim(ctx, "node-7 (v2)"); err != nil {
		log.Fatalln(err)
	}
	info, err := e.Leader(ctx)
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("leader:", info.Value, "term matches:", info.Term == lead.Term())

	// Pass lead.Term() with every write: the resource refuses a term lower
	// than the highest it has seen, so a deposed leader is harmless.

	if err := lead.Resign(ctx); err != nil {
		log.Fatalln(err)
	}
	if _, err := e.Leader(ctx); errors.Is(err, redislock.ErrNoLeader) {
		fmt.Println("no leader after Resign")
	}
	// Output:
	// leader: node-7 (v2) term matches: true
	// no leader after Resign
}

func ExampleElection_Run() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()

	e := redislock.New(rdb).Election("example:run")
	err := e.Run(ctx, "node-1", 10*time.Second, func(_ context.Context, lead *redislock.Leadership) error {
		fmt.Println("leading as", lead.Value())
		return nil // Run resigns when fn returns
	})
	fmt.Println("done:", err)
	// Output:
	// leading as node-1
	// done: <nil>
}

func ExampleElection_Observe() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer func() { _ = rdb.Close() }()

	e := redislock.New(rdb).Election("example:observe")
	events := e.Observe(ctx) // one goroutine, until ctx ends
	fmt.Println((<-events).Kind)

	lead, err := e.Campaign(ctx, "node-3", 10*time.Second)
	if err != nil {
		log.Fatalln(err)
	}
	ev := <-events
	fmt.Println(ev.Kind, ev.Value)
	_ = lead.Proclaim(ctx, "node-3 busy")
	ev = <-events
	fmt.Println(ev.Kind, ev.Value)
	_ = lead.Resign(ctx)
	fmt.Println((<-events).Kind)
	// Output:
	// no leader
	// elected node-3
	// proclaimed node-3 busy
	// no leader
}
