package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// TestReadmeHasThisProgram keeps the README's quick start and this file the
// same program, so that what a newcomer pastes compiles and runs.
func TestReadmeHasThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	// The README shows the program from "package main" on, without the
	// comment that says where it is kept.
	_, body, ok := bytes.Cut(src, []byte("package main\n"))
	if !ok {
		t.Fatal("main.go has no package clause")
	}
	want := "```go\npackage main\n" + string(body) + "```\n"
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not contain main.go (from \"package main\" on) in a go block; copy it there:\n%s", want)
	}
}

// TestRun runs the program against a real server: while another replica
// holds the lock it skips the job; alone, it runs the job and releases the
// lock.
func TestRun(t *testing.T) {
	addr := redistest.SharedServer(t, redistest.Redis).Addr()
	rdb := redistest.Standalone(t)
	ctx := context.Background()

	// Another replica holds the lock: this one skips the job.
	other, err := redislock.New(rdb).Obtain(ctx, "report:daily", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, addr); err != nil {
		t.Fatalf("run while another holds the lock: %v", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Nobody holds it: this one runs the job, and releases the lock.
	if err := run(ctx, addr); err != nil {
		t.Fatalf("run: %v", err)
	}
	if n, err := rdb.Exists(ctx, "report:daily").Result(); err != nil || n != 0 {
		t.Errorf("report:daily after run: exists %d, %v; want released", n, err)
	}
}
