package redistest

import (
	"sync"
	"testing"
)

// reported remembers which (test, instance) pairs already have a log report
// registered, so that a test using an instance many times prints its logs
// once.
var reported sync.Map // reportKey -> struct{}

type reportKey struct {
	t    testing.TB
	inst any
}

// reportOnFailure registers a cleanup that, if t failed, logs describe()
// (the tail of the logs of inst's servers). Registering the same inst twice
// for one test does nothing.
func reportOnFailure(t testing.TB, inst any, describe func() string) {
	k := reportKey{t, inst}
	if _, loaded := reported.LoadOrStore(k, struct{}{}); loaded {
		return
	}
	t.Cleanup(func() {
		reported.Delete(k)
		if t.Failed() {
			t.Log(describe())
		}
	})
}

// instance is what a test can own: a server or a set of them.
type ownable interface {
	stop()
	report(lines int) string
}

// own hands v, just started (or err), to t: it fails the test on err, and
// otherwise has Cleanup stop v, after logging the last lines of its logs
// if the test failed.
func own[T ownable](t testing.TB, v T, err error, lines int) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.stop)
	reportOnFailure(t, v, func() string { return v.report(lines) })
	return v
}
