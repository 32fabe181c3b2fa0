package redislockcron_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockcron"
	"github.com/redislock/redislock/internal/redistest"
)

// BenchmarkRun: what a fire costs beside its job, on a local redis-server:
// the obtain, the keep-alive's start and stop, the release (with MinHold,
// a refresh to what is left of it; each iteration a key of its own, since
// the hold keeps the last one: they expire within the minute, or the
// hour's end and one more for OncePer).
func BenchmarkRun(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	c := redislock.New(rdb)
	nop := func(context.Context) error { return nil }
	for _, bc := range []struct {
		name string
		opt  redislockcron.Options
		each bool // a Locker (a key) per iteration
	}{
		{"plain", redislockcron.Options{}, false},
		{"MinHold", redislockcron.Options{MinHold: time.Minute}, true},
		{"OncePer", redislockcron.Options{OncePer: time.Hour}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			base := redistest.Key(b, "job")
			l, err := redislockcron.New(c, base, &bc.opt)
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if bc.each {
					i++
					b.StopTimer()
					l, err = redislockcron.New(c, fmt.Sprintf("%s:%d", base, i), &bc.opt)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := l.Run(ctx, nop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
