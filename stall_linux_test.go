package redislock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// Issue 32 item 3: a waiter at the head of the line that stops answering
// (its process stopped with SIGSTOP, its connection open) keeps what it
// was handed for its claim window at most (500 ms with a TTL of 10 s), on
// a lock, a permit, a write lock and a campaign: the release leaves a
// reservation for it that expires by then, and the live waiter behind it
// is served. Before, the attempt the stalled waiter had queued behind its
// block ran on the server and took the key for the waiter's whole TTL.
func TestWaitForReleaseStalledWaiter(t *testing.T) {
	for _, kind := range []string{"lock", "permit", "write", "campaign"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			srv := redistest.SharedServer(t, redistest.Redis)
			admin := srv.Client(t)
			ctx := context.Background()
			name := redistest.Key(t, kind)
			w := primitiveWaiters[kind](redislock.New(admin), name)
			release, err := w.take(ctx)
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
			helperName := clientName("stalled")
			stalled := startStallHelper(t, stallSpec{Addr: srv.Addr(), Kind: kind, Name: name, Client: helperName})
			waitUntil(t, "the helper to block", func() bool { return blocked(t, admin, helperName) })
			stalled.stop(t)

			liveName := clientName("live")
			live := redis.NewClient(&redis.Options{Addr: srv.Addr(), ClientName: liveName})
			defer live.Close()
			done := make(chan error, 1)
			go func() {
				r, err := primitiveWaiters[kind](redislock.New(live), name).take(ctx)
				if err == nil {
					err = r(ctx)
				}
				done <- err
			}()
			waitUntil(t, "the live waiter to block", func() bool { return blocked(t, admin, liveName) })
			released := time.Now()
			if err := release(ctx); err != nil {
				t.Fatalf("holder's release: %v", err)
			}
			// What the stalled waiter was handed: a reservation that ends
			// with its claim window, not its lock.
			if left := w.reservedFor(t, admin); left <= 0 || left > 500*time.Millisecond {
				t.Errorf("after the release %s is reserved for the stalled waiter for %v, want a reservation of at most its claim window (500ms)", w.key, left)
			}
			if err := <-done; err != nil {
				t.Fatalf("live waiter: %v", err)
			}
			t.Logf("the stalled waiter held the live one up for %v", time.Since(released).Round(time.Millisecond))
		})
	}
}

// stallHelperEnv names the environment variable that makes the test
// binary a helper of TestWaitForReleaseStalledWaiter (a JSON stallSpec).
const stallHelperEnv = "REDISLOCK_STALL_HELPER"

type stallSpec struct {
	Addr, Kind, Name, Client string
}

func init() {
	if spec := os.Getenv(stallHelperEnv); spec != "" {
		os.Exit(stallHelperMain(spec))
	}
}

// stallHelperMain waits for spec's primitive, through a client named
// spec.Client, until it gets it or a minute passes; the test stops it
// while it waits.
func stallHelperMain(js string) int {
	var spec stallSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", stallHelperEnv, js, err)
		return 2
	}
	rdb := redis.NewClient(&redis.Options{Addr: spec.Addr, ClientName: spec.Client})
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := primitiveWaiters[spec.Kind](redislock.New(rdb), spec.Name).take(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "stall helper:", err)
		return 1
	}
	return 0
}

type stallHelper struct {
	cmd *exec.Cmd
}

// startStallHelper runs the helper process; cleanup continues and kills it.
func startStallHelper(t *testing.T, spec stallSpec) *stallHelper {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := &stallHelper{cmd: exec.Command(os.Args[0], "-test.run=^$")} // #nosec G204 G702 -- this test binary, run again
	h.cmd.Env = append(os.Environ(), stallHelperEnv+"="+string(js))
	h.cmd.Stderr = os.Stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGCONT)
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
	})
	return h
}

// stop stops the helper (SIGSTOP): its connections stay open, and it
// answers nothing.
func (h *stallHelper) stop(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	// The kernel reports the stop in /proc: wait for it, so that nothing
	// of the helper's runs after this returns.
	stat := "/proc/" + strconv.Itoa(h.cmd.Process.Pid) + "/stat"
	redistest.WaitFor(t, "the helper to stop", 10*time.Second, func() bool {
		b, err := os.ReadFile(stat) // #nosec G304 -- /proc of our own child
		return err == nil && regexp.MustCompile(`\) T `).Match(b)
	})
}
