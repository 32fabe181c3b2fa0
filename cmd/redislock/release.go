package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

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

A holder still running notices the release at its next refresh and stops
its command ("redislock run" exits 76).

Exit status: 0 released; 3 not held with TOKEN (expired, released, or held
with another token: nothing was deleted); 1 on a Redis error; 2 on a usage
error.

Examples:
  redislock release nightly-report --token 3q2-7wEAAAAFdN1c9DyIkg
  redislock release --token "$(redislock status --json job | jq -r '.locks[0].token')" job`

// runRelease is the "release" subcommand.
func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "redislock release"
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	token := fs.String("token", "", "the holder's `TOKEN` (required)")
	conn := addConnFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", releaseHelp)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\n%s\n", connHelp)
	}
	keys, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	switch {
	case len(keys) == 0:
		return usageFailure(stderr, "release", "missing KEY")
	case *token == "":
		return usageFailure(stderr, "release", "missing --token: only the holder's token releases a lock")
	}

	rdb, code, ok := conn.connect(ctx, prog, stderr)
	if !ok {
		return code
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()

	locker := redislock.New(rdb)
	lock, err := locker.Attach(keys, *token, 0)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
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
			fmt.Fprintf(stdout, "released %s\n", k)
		}
		return exitOK
	case errors.Is(err, redislock.ErrLockNotHeld):
		for i, k := range keys {
			switch info := before[i]; {
			case info == nil:
				fmt.Fprintf(stderr, "%s: %s: not held with this token\n", prog, k)
			case !info.Held:
				fmt.Fprintf(stderr, "%s: %s: not held (expired, or released already)\n", prog, k)
			case info.Token != *token:
				fmt.Fprintf(stderr, "%s: %s: refused: held with another token (metadata %q); nothing deleted\n", prog, k, info.Metadata)
			case len(keys) == 1:
				fmt.Fprintf(stderr, "%s: %s: not held (it expired meanwhile)\n", prog, k)
			default:
				// A key of a multi-key lock that was still ours.
				fmt.Fprintf(stdout, "released %s\n", k)
			}
		}
		return exitNotHeld
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	return exitFailure
}
