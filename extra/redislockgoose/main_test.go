package redislockgoose_test

import (
	"database/sql"
	"fmt"
	"os"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// redisAddr is the server of the runnable examples: in your code, your
// server's address. Here TestMain sets it to the redis-server that the
// test harness started on a free port.
var redisAddr string

func TestMain(m *testing.M) { os.Exit(redistest.Run(examplesOnSharedServer{m})) }

// examplesOnSharedServer points the examples at the shared redis-server
// before the tests and examples run.
type examplesOnSharedServer struct{ m *testing.M }

func (e examplesOnSharedServer) Run() int {
	addr, err := redistest.SharedAddr(redistest.Redis)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	redisAddr = addr
	return e.m.Run()
}

// openDB opens the SQLite database in file, as each replica would its
// own connection to the shared database.
func openDB(t testing.TB, file string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
