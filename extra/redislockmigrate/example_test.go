package redislockmigrate_test

import (
	"database/sql"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockmigrate"
)

// Every replica runs this at start: the first to take the lock migrates,
// the others wait for it and then find nothing to do (migrate.ErrNoChange).
func Example() {
	dir, err := os.MkdirTemp("", "redislockmigrate-example-")
	if err != nil {
		log.Fatalln(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatalln(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	inner, err := sqlite.WithInstance(db, &sqlite.Config{})
	if err != nil {
		log.Fatalln(err)
	}
	driver, err := redislockmigrate.Wrap(inner, redislock.New(rdb), "example:migrations", nil)
	if err != nil {
		log.Fatalln(err)
	}
	src, err := iofs.New(fstest.MapFS{
		"1_users.up.sql": {Data: []byte("CREATE TABLE users (id INTEGER PRIMARY KEY);")},
	}, ".")
	if err != nil {
		log.Fatalln(err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", driver)
	if err != nil {
		log.Fatalln(err)
	}
	defer m.Close() // closes the driver, and the database

	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		log.Fatalln(err)
	}
	version, dirty, err := m.Version()
	fmt.Println(version, dirty, err)
	// Output:
	// 1 false <nil>
}
