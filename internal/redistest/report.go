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
