package redislockgoose_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/pressly/goose/v3"
	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockgoose"
)

// Every replica runs this at start: the first to take the lock migrates,
// the others wait for it and then find nothing to do.
func Example() {
	dir, err := os.MkdirTemp("", "redislockgoose-example-")
	if err != nil {
		log.Fatalln(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatalln(err)
	}
	defer db.Close()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	locker, err := redislockgoose.New(redislock.New(rdb), "example:migrations", &redislockgoose.Options{
		OnLost: cancel, // a lost lock stops the migrations at once
	})
	if err != nil {
		log.Fatalln(err)
	}
	migrations := fstest.MapFS{
		"00001_users.sql": {Data: []byte("-- +goose Up\nCREATE TABLE users (id INTEGER PRIMARY KEY);\n")},
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations, goose.WithLocker(locker))
	if err != nil {
		log.Fatalln(err)
	}
	results, err := provider.Up(ctx)
	if err != nil {
		log.Fatalln(err)
	}
	for _, r := range results {
		fmt.Println("applied", r.Source.Path)
	}
	// Output:
	// applied 00001_users.sql
}
