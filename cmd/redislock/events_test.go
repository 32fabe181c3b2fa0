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

var heldFor = regexp.MustCompile(`held for [0-9.]+m?s$`)

// TestVerboseEvents: --verbose says what a run holds, a lock or, with
// --limit, a permit of the semaphore, in each event's line.
func TestVerboseEvents(t *testing.T) {
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{0, []string{
			"obtained job (token 01234567…, fence token 7); held for",
			"refreshed job; held for",
			"lost job: boom",
			"released job",
		}},
		{3, []string{
			"obtained a permit of job (limit 3, token 01234567…, fence token 7); held for",
			"refreshed the permit of job; held for",
			"lost the permit of job: boom",
			"released the permit of job",
		}},
	} {
		var got []string
		say := func(format string, args ...any) {
			// The time left moves with the clock: only its presence counts.
			got = append(got, heldFor.ReplaceAllString(fmt.Sprintf(format, args...), "held for"))
		}
		v := &verboseEvents{say: say, limit: tc.limit}
		until := time.Now().Add(10 * time.Second)
		v.obtained(&fakeHeld{key: "job", token: "0123456789", fence: 7}, until)
		v.refreshed("job", until)
		v.lost("job", errors.New("boom"))
		v.released("job")
		if !slices.Equal(got, tc.want) {
			t.Errorf("--limit %d:\ngot:\n\t%s\nwant:\n\t%s", tc.limit, strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
		}
	}
}
