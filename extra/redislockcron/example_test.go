package redislockcron_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockcron"
)

// Each replica schedules the job with the same name; at each fire one of
// them runs it, and the key stays held for MinHold after it started, so
// that a replica firing up to a minute later skips that fire.
func Example() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	locker, err := redislockcron.New(redislock.New(rdb), "example:report", &redislockcron.Options{
		MinHold: time.Minute,
	})
	if err != nil {
		log.Fatalln(err)
	}
	done := make(chan struct{})
	c := cron.New()
	// An hourly job would be c.AddJob("0 * * * *", locker.Job(...)); this
	// one fires within a second.
	c.Schedule(cron.Every(time.Second), locker.Job(func(ctx context.Context) error {
		// ctx is cancelled if the lock is lost while the report runs.
		fmt.Println("report sent")
		close(done)
		return nil
	}))
	c.Start()
	<-done
	<-c.Stop().Done()

	// Another replica, half a second behind, finds the fire taken.
	err = locker.Run(context.Background(), func(context.Context) error {
		fmt.Println("report sent again")
		return nil
	})
	fmt.Println("second replica skipped:", errors.Is(err, redislock.ErrNotObtained))

	rdb.Del(context.Background(), "example:report") // so that the example can run again at once
	// Output:
	// report sent
	// second replica skipped: true
}

// A job that must run once per hour whatever the skew between replicas
// takes one key per hour (OncePer): a replica that fires late in the hour
// finds that hour's key taken; the next hour has a key of its own.
func ExampleOptions_oncePer() {
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	locker, err := redislockcron.New(redislock.New(rdb), "example:hourly", &redislockcron.Options{
		OncePer: time.Hour,
	})
	if err != nil {
		log.Fatalln(err)
	}
	c := cron.New()
	if _, err := c.AddJob("0 * * * *", locker.Job(func(ctx context.Context) error {
		return nil // the hour's work
	})); err != nil {
		log.Fatalln(err)
	}
	key, _ := redislock.SlotKey("example:hourly", time.Hour, time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC))
	fmt.Println(key)
	// Output:
	// example:hourly:2026-12-04T10:00:00.000Z
}
