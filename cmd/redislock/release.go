package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

const releaseHelp = `usage: redislock release [flags] KEY... --token TOKEN

Releases the lock held on KEY with TOKEN, as its holder would: for cleanup
after a holder died (a crashed host), without waiting for the lock to
expire. The ownership check is the holder's own, by exact token, in one
script: with any other token nothing is deleted. Give every key of a
multi-key lock (which must then all be held with TOKEN).

"redislock status --json KEY" shows the token of the current holder;
"redislock run" gives its command the token as $REDISLOCK_TOKEN.

The token of a shared hold ("redislock run --shared") is refused, saying
so: a shared hold ends with its run, or expires by itself at its TTL.

On a quorum (--redis given 3, 5 or more times) KEY is released on every
master that holds it with TOKEN: exit 0 when a majority did (a master
that failed is named on stderr), 3 when fewer held it with TOKEN, 69 when
masters that failed could have made the difference. A holder still
running takes its keys back at its next refresh (on a quorum a refresh
re-takes missing keys while its lease lasts): there, release is only for
holders that died.

A holder still running notices the release at its next refresh, up to a
third of its TTL later, and only then stops its command ("redislock run"
exits 76): until then both it and a new holder may run.

Exit status:
  0  released
  3  not held with TOKEN: for one key, nothing was deleted (it expired, was
     released, or is held with another token); for several keys, the keys
     still held with TOKEN were deleted and the others were not held with
     it: "lock was partly lost" (each key gets a line)
  69 Redis could not be reached or failed; --redis-error-exit-code changes it
  1  a URL that does not parse, a file that cannot be read
  2  a usage error

Examples:
  redislock release nightly-report --token 3q2-7wEAAAAFdN1c9DyIkg
  redislock release --token "$(redislock status --json job | jq -r '.locks[0].token')" job`

// newReleaseFlags defines the flags of "release": the token, and the
// connection. It is also what the completion scripts list.
func newReleaseFlags() (fs *flag.FlagSet, token *string, conn *connFlags) {
	fs = flag.NewFlagSet("release", flag.ContinueOnError)
	token = fs.String("token", "", "the holder's `TOKEN` (required)")
	conn = addConnFlags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", releaseHelp)
		printFlags(fs.Output(), fs, nil)
		_, _ = fmt.Fprintf(fs.Output(), "\n%s\n", connHelp)
	}
	return fs, token, conn
}

// runRelease is the "release" subcommand.
func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "redislock release"
	fs, token, conn := newReleaseFlags()
	keys, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(keys) == 0:
		return usageFailure(stderr, "release", "missing KEY")
	case *token == "":
		return usageFailure(stderr, "release", "missing --token: only the holder's token releases a lock")
	case conn.check() != "":
		return usageFailure(stderr, "release", conn.check())
	case conn.quorum():
		return releaseQuorum(ctx, prog, conn, keys, *token, stdout, stderr)
	}

	rdb, code, ok := conn.connect(ctx, prog, stderr)
	if !ok {
		return code
	}
	defer func() { _ = rdb.Close() }()
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()

	locker := redislock.New(rdb)
	lock, err := locker.Attach(keys, *token, 0)
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitUsage
	}
	// Read the keys first, only to explain a refusal: Release deletes the
	// keys still held with the token even when others are not.
	before := make([]*redislock.LockInfo, len(keys))
	for i, k := range keys {
		before[i], _ = locker.Inspect(ctx, k)
	}
	err = lock.Release(ctx)
	switch {
	case err == nil:
		for _, k := range keys {
			_, _ = fmt.Fprintf(stdout, "released %s\n", k)
		}
		return exitOK
	case errors.Is(err, redislock.ErrLockNotHeld):
		partly := false
		for i, k := range keys {
			info := before[i]
			var shared time.Duration
			if info != nil && !info.Held {
				shared = sharedTTL(ctx, rdb, k, *token)
			}
			switch {
			case shared > 0:
				_, _ = fmt.Fprintf(stderr, "%s: %s: this token is a shared hold (redislock run --shared), which release cannot end: it expires by itself within %v, or when its run ends\n", prog, k, shared.Round(time.Millisecond))
			case info == nil:
				_, _ = fmt.Fprintf(stderr, "%s: %s: not held with this token\n", prog, k)
			case !info.Held:
				_, _ = fmt.Fprintf(stderr, "%s: %s: not held (expired, or released already)\n", prog, k)
			case info.Token != *token:
				_, _ = fmt.Fprintf(stderr, "%s: %s: refused: held with another token (metadata %q): left alone\n", prog, k, info.Metadata)
			case len(keys) == 1:
				_, _ = fmt.Fprintf(stderr, "%s: %s: not held (it expired meanwhile)\n", prog, k)
			default:
				// A key of a multi-key lock that was still ours.
				partly = true
				_, _ = fmt.Fprintf(stdout, "released %s\n", k)
			}
		}
		if partly {
			_, _ = fmt.Fprintf(stderr, "%s: lock was partly lost: the keys still held with this token were released, the others were not held with it\n", prog)
		}
		return exitNotHeld
	}
	_, _ = fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return conn.errorCode
}

// sharedTTL returns the time left to the shared hold of key with token, or
// 0 when there is none (or the holds cannot be read).
func sharedTTL(ctx context.Context, rdb redis.UniversalClient, key, token string) time.Duration {
	holds, err := sharedHolds(ctx, rdb, key)
	if err != nil {
		return 0
	}
	for _, h := range holds {
		if h.Token == token {
			return h.TTL
		}
	}
	return 0
}
