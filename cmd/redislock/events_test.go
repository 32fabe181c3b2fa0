package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock"
)

// fakeHeld is a handle with fixed accessors, for the lines of events.
type fakeHeld struct {
	redislock.Lock
	key, token string
	fence      int64
}

func (f *fakeHeld) Key() string       { return f.key }
func (f *fakeHeld) Token() string     { return f.token }
func (f *fakeHeld) FenceToken() int64 { return f.fence }

var durations = regexp.MustCompile(`[0-9.]+[mµn]?s\b`)

// TestVerboseEvents: --verbose says what a run holds, a lock, a permit of
// the semaphore (--limit) or a shared hold (--shared), in each event's
// line; the time it gives on obtaining and refreshing is the time left on
// the lease, said so, and the release says how long the run held it.
func TestVerboseEvents(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		shared bool
		want   []string
	}{
		{want: []string{
			"obtained job (token 01234567…, fence token 7); its lease ends in D",
			"refreshed job; its lease ends in D",
			"lost job: boom",
			"released job (held for D)",
		}},
		{limit: 3, want: []string{
			"obtained a permit of job (limit 3, token 01234567…, fence token 7); its lease ends in D",
			"refreshed the permit of job; its lease ends in D",
			"lost the permit of job: boom",
			"released the permit of job (held for D)",
		}},
		{shared: true, want: []string{
			"obtained a shared hold of job (token 01234567…, fence token 7); its lease ends in D",
			"refreshed the shared hold of job; its lease ends in D",
			"lost the shared hold of job: boom",
			"released the shared hold of job (held for D)",
		}},
	} {
		var got []string
		say := func(format string, args ...any) {
			// Durations move with the clock: only their presence counts.
			got = append(got, durations.ReplaceAllString(fmt.Sprintf(format, args...), "D"))
		}
		v := &verboseEvents{say: say, limit: tc.limit, shared: tc.shared}
		until := time.Now().Add(10 * time.Second)
		v.obtained(&fakeHeld{key: "job", token: "0123456789", fence: 7}, until)
		v.refreshed("job", until)
		v.lost("job", errors.New("boom"))
		v.released("job")
		if !slices.Equal(got, tc.want) {
			t.Errorf("--limit %d, --shared %v:\ngot:\n\t%s\nwant:\n\t%s", tc.limit, tc.shared, strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
		}
	}
}
