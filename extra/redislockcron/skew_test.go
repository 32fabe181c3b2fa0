package redislockcron_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockcron"
	"github.com/redislock/redislock/internal/redistest"
)

// skew is how far behind replica B fires: the 500 ms of the issue.
const skew = 500 * time.Millisecond

// grid is a cron.Schedule that fires at the multiples of period (since the
// zero time, as redislock.SlotKey counts slots) on a clock that reads
// behind real time: a replica whose clock is behind, or whose scheduler
// fires late, by behind. Robfig/cron has no clock to inject (it reads
// time.Now), so the offset is in the schedule: both replicas run on the
// real clock, and B's fires come behind later than A's. Its own specs
// fire once a second at most, too slowly for a test of many fires.
type grid struct{ period, behind time.Duration }

func (g grid) Next(t time.Time) time.Time {
	return t.Add(-g.behind).Truncate(g.period).Add(g.period + g.behind)
}

// fire names the fire that a grid fired last at or before t: the start of
// its period on the replica's clock.
func (g grid) fire(t time.Time) time.Time { return t.Add(-g.behind).Truncate(g.period) }

// tally counts, per fire, which replicas fired it and which ran the job.
type tally struct {
	mu    sync.Mutex
	fired map[time.Time][]string
	ran   map[time.Time][]string
	// lastB gets each fire of replica B once it is over (run or skipped).
	lastB chan time.Time
}

func newTally() *tally {
	return &tally{fired: map[time.Time][]string{}, ran: map[time.Time][]string{}, lastB: make(chan time.Time, 100)}
}

func (tl *tally) add(m map[time.Time][]string, fire time.Time, replica string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	m[fire] = append(m[fire], replica)
}

// replica is one scheduler firing job name through its own Locker (its own
// redislock.Client), on grid g.
func replica(t *testing.T, tl *tally, id string, g grid, rdb *redis.Client, name string, opt redislockcron.Options, work time.Duration) (*cron.Cron, *logger) {
	t.Helper()
	log := &logger{}
	opt.Logger = log
	l, err := redislockcron.New(redislock.New(rdb), name, &opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	job := l.Job(func(ctx context.Context) error {
		tl.add(tl.ran, g.fire(time.Now()), id)
		select {
		case <-time.After(work): // the job's work
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	c := cron.New()
	c.Schedule(g, cron.FuncJob(func() {
		fire := g.fire(time.Now())
		tl.add(tl.fired, fire, id)
		job.Run()
		if id == "B" {
			tl.lastB <- fire
		}
	}))
	return c, log
}

// runReplicas runs two schedulers firing one job, B behind A by skew, until
// B has fired fires times, and returns how many times each fire that both
// fired was run, in order.
func runReplicas(t *testing.T, name string, period, work time.Duration, opt redislockcron.Options, fires int) (runs []int, skips int) {
	t.Helper()
	rdb := redistest.Standalone(t)
	tl := newTally()
	a, logA := replica(t, tl, "A", grid{period: period}, rdb, name, opt, work)
	b, logB := replica(t, tl, "B", grid{period: period, behind: skew}, rdb, name, opt, work)
	a.Start()
	b.Start()
	deadline := time.After(time.Duration(fires+2)*period + waitTimeout)
	for n := 0; n < fires; n++ {
		select {
		case <-tl.lastB:
		case <-deadline:
			t.Fatalf("replica B fired %d times of %d", n, fires)
		}
	}
	<-a.Stop().Done() // waits for a job still running
	<-b.Stop().Done()

	tl.mu.Lock()
	defer tl.mu.Unlock()
	var both []time.Time
	for fire, who := range tl.fired {
		if len(who) == 2 {
			both = append(both, fire)
		}
		if len(who) > 2 || len(who) == 2 && who[0] == who[1] {
			t.Errorf("fire %v fired by %v: a replica fired it twice", fire, who)
		}
	}
	slices.SortFunc(both, time.Time.Compare)
	for _, fire := range both {
		runs = append(runs, len(tl.ran[fire]))
	}
	if len(both) < fires-1 {
		t.Errorf("only %d fires were fired by both replicas, want %d at least", len(both), fires-1)
	}
	for _, l := range []*logger{logA, logB} {
		s, errs := l.counts()
		skips += s
		for _, err := range errs {
			t.Errorf("a fire failed: %v", err)
		}
	}
	t.Logf("%d fires fired by both replicas; runs per fire %v; %d skips", len(both), runs, skips)
	return runs, skips
}

// checkOnce checks that each fire ran once, and that the other replica's
// fire was logged as a skip.
func checkOnce(t *testing.T, runs []int, skips int) {
	t.Helper()
	for i, n := range runs {
		if n != 1 {
			t.Errorf("fire %d of %d ran %d times, want once: runs per fire %v", i+1, len(runs), n, runs)
		}
	}
	if skips < len(runs) {
		t.Errorf("%d skips logged for %d fires fired by both replicas, want one each at least", skips, len(runs))
	}
}

// Two schedulers fire the same job, one 500 ms behind the other, every
// 1.2 s: with MinHold (850 ms: above the skew, below the period less the
// skew) each fire runs once, for jobs of 10 ms and of 3 s; without it, a
// 10 ms job runs twice per fire.
func TestSkewMinHold(t *testing.T) {
	t.Parallel()
	const period = 1200 * time.Millisecond
	hold := redislockcron.Options{MinHold: 850 * time.Millisecond}
	t.Run("10ms", func(t *testing.T) {
		t.Parallel()
		runs, skips := runReplicas(t, redistest.Key(t, "job"), period, 10*time.Millisecond, hold, 8)
		checkOnce(t, runs, skips)
	})
	t.Run("3s", func(t *testing.T) {
		t.Parallel()
		// The job outlives its 1 s TTL threefold: the keep-alive keeps
		// the key (no loss logged), and B's fires while it runs, and A's
		// next one, are skipped. Fires every 4 s, so that each finds the
		// last one's job done.
		opt := hold
		opt.TTL = time.Second
		runs, skips := runReplicas(t, redistest.Key(t, "job"), 4*time.Second, 3*time.Second, opt, 4)
		checkOnce(t, runs, skips)
	})
	t.Run("without", func(t *testing.T) {
		t.Parallel()
		runs, _ := runReplicas(t, redistest.Key(t, "job"), period, 10*time.Millisecond, redislockcron.Options{}, 4)
		if !slices.Contains(runs, 2) {
			t.Errorf("without MinHold no fire ran twice (runs per fire %v): the test cannot see a double run", runs)
		}
	})
}

// The same with OncePer, one key per slot of the schedule's period.
func TestSkewOncePer(t *testing.T) {
	t.Parallel()
	t.Run("10ms", func(t *testing.T) {
		t.Parallel()
		const period = 1200 * time.Millisecond
		runs, skips := runReplicas(t, redistest.Key(t, "{job}"), period, 10*time.Millisecond, redislockcron.Options{OncePer: period}, 8)
		checkOnce(t, runs, skips)
	})
	t.Run("3s", func(t *testing.T) {
		t.Parallel()
		const period = 4 * time.Second
		runs, skips := runReplicas(t, redistest.Key(t, "{job}"), period, 3*time.Second, redislockcron.Options{OncePer: period, TTL: time.Second}, 4)
		checkOnce(t, runs, skips)
	})
}
