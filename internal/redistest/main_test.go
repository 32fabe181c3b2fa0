package redistest

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// fakeTB records what the harness does with a test, so that failure paths
// (Fatal, logs on failure) can be tested. Fatal ends the calling goroutine
// like the real one: call the harness through fakeTB.run.
type fakeTB struct {
	testing.TB // the real test, for everything not overridden

	mu       sync.Mutex
	failed   bool
	fatal    string
	logs     []string
	cleanups []func()
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Failed() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.failed }

func (f *fakeTB) Log(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range args {
		if s, ok := a.(string); ok {
			f.logs = append(f.logs, s)
		}
	}
}

func (f *fakeTB) Fatal(args ...any) {
	f.mu.Lock()
	f.failed = true
	f.fatal += fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Fatalf(format string, args ...any) { f.Fatal(fmt.Errorf(format, args...)) }

func (f *fakeTB) FailNow() { f.Fatal() }

func (f *fakeTB) Fail() { f.mu.Lock(); defer f.mu.Unlock(); f.failed = true }

func (f *fakeTB) Error(args ...any) { f.Fail(); f.Log(fmt.Sprint(args...)) }

func (f *fakeTB) Errorf(format string, args ...any) { f.Fail(); f.Log(fmt.Sprintf(format, args...)) }

func (f *fakeTB) Logf(format string, args ...any) { f.Log(fmt.Sprintf(format, args...)) }

func (f *fakeTB) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// run calls fn in a goroutine and waits, so that Fatal can end it.
func (f *fakeTB) run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// cleanup runs the registered cleanups, last first.
func (f *fakeTB) cleanup() {
	for {
		f.mu.Lock()
		if len(f.cleanups) == 0 {
			f.mu.Unlock()
			return
		}
		fn := f.cleanups[len(f.cleanups)-1]
		f.cleanups = f.cleanups[:len(f.cleanups)-1]
		f.mu.Unlock()
		fn()
	}
}
