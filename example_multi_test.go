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

// One lock over several keys, taken all or none. HashTag names the keys so
// that they share a hash slot, as Redis Cluster requires (a plain client,
// as here, does not mind).
func ExampleClient_ObtainMulti() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	locker := redislock.New(rdb)

	invoice := redislock.HashTag("example:invoice:42")
	lock, err := locker.ObtainMulti(ctx, invoice.Keys("ledger", "pdf"), time.Minute, &redislock.Options{
		FenceKey: invoice.Key("fence"),
	})
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println(lock.Keys())

	// Another caller that needs the pdf and the mail gets neither: the
	// mail key stays free.
	_, err = locker.ObtainMulti(ctx, invoice.Keys("pdf", "mail"), time.Minute, nil)
	fmt.Println(errors.Is(err, redislock.ErrNotObtained))
	mail, err := locker.Inspect(ctx, invoice.Key("mail"))
	if err != nil {
		log.Fatalln(err)
	}
	fmt.Println("mail held:", mail.Held)

	if err := lock.Release(ctx); err != nil {
		log.Fatalln(err)
	}
	// Output:
	// [{example:invoice:42}:ledger {example:invoice:42}:pdf]
	// true
	// mail held: false
}
