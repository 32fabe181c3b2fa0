package redistest

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Run runs the tests of m (a *testing.M, or a wrapper of one that prepares
// something first) and then stops every shared instance, kills any
// server still running (reaping it) and removes their directories; it
// returns m.Run's exit code. Call it from the TestMain of every package that
// uses this one:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }
//
// Run also silences go-redis's global logger (redis.SetLogger): failover
// tests dial dead servers on purpose, and go-redis logs every failed dial to
// stderr.
//
// Forgetting TestMain leaks nothing that runs: every server is killed by the
// kernel when the test binary exits. Only the temporary directories stay
// until the next test binary using this package removes them.
func Run(m interface{ Run() int }) int {
	redis.SetLogger(quietLogger{})
	defer func() {
		stopShared()
		killAll()
		stopSpawner()
	}()
	return m.Run()
}

// quietLogger discards go-redis's log messages.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
