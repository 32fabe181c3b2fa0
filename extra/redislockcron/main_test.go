package redislockcron_test

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
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

// logger is a cron.Logger that keeps what it is told.
type logger struct {
	mu     sync.Mutex
	skips  int
	errors []error
}

func (l *logger) Info(msg string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if msg == "skip" {
		l.skips++
	}
}

func (l *logger) Error(err error, _ string, _ ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, err)
}

func (l *logger) counts() (skips int, errs []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.skips, append([]error(nil), l.errors...)
}
