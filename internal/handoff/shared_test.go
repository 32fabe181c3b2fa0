package handoff

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sharedModel is a conn that plays a server holding a key that, once
// released, admits every attempt (a read-write lock's read holds behind a
// writer): a block ends at the release, or after its time.
type sharedModel struct {
	mu       sync.Mutex
	released chan struct{}
	free     bool
	attempts int
	blocks   int
}

func (m *sharedModel) reply() any {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts++
	if m.free {
		return int64(0)
	}
	return []any{int64(-1), int64(1), int64(0)}
}

func (m *sharedModel) attempt(context.Context, []string, []any) (any, error) { return m.reply(), nil }

func (m *sharedModel) block(_ context.Context, _ []string, _, lists []any, d time.Duration) (string, error) {
	m.mu.Lock()
	m.blocks++
	m.mu.Unlock()
	select {
	case <-m.released:
		// The release wakes the readers: the leader's grant comes.
		return lists[0].(string), nil
	case <-time.After(d):
		return "", nil
	}
}

func (m *sharedModel) leave(context.Context, []string, []any) {}

func (m *sharedModel) tick(context.Context) time.Duration { return time.Millisecond }

// With Request.Shared, the waits of a group enter together: when the
// leader obtains at the end of its block, the others attempt at once,
// without blocking in turn; without it, each blocks when the lead passes
// to it.
func TestWaitShared(t *testing.T) {
	for _, shared := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			m := &sharedModel{released: make(chan struct{})}
			r := NewRegistry()
			req := request(time.Minute)
			req.Shared = shared
			const n = 4
			var wg sync.WaitGroup
			obtained := make(chan time.Time, n)
			for range n {
				wg.Go(func() {
					if out, err := r.run(context.Background(), req, m, maxBlock); err != nil || !out.Obtained {
						t.Errorf("shared %t: %v, %v", shared, out, err)
					}
					obtained <- time.Now()
				})
			}
			synctest.Wait()
			start := time.Now()
			time.Sleep(100 * time.Millisecond) // in the bubble: the leader blocks meanwhile
			m.mu.Lock()
			m.free = true
			close(m.released)
			m.mu.Unlock()
			wg.Wait()
			close(obtained)
			for at := range obtained {
				if d := at.Sub(start); d != 100*time.Millisecond {
					t.Errorf("shared %t: a wait obtained %v after the start, want at the release (100ms)", shared, d)
				}
			}
			// Each wait's first attempt, then its attempt after the release:
			// after a block of its own, or (shared) the leader's block only.
			want := 1
			if !shared {
				want = n
			}
			if m.blocks != want || m.attempts != 2*n {
				t.Errorf("shared %t: %d blocks and %d attempts, want %d and %d", shared, m.blocks, m.attempts, want, 2*n)
			}
		})
	}
}
