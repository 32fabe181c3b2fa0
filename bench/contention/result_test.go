package contention

import (
	"strings"
	"testing"
	"time"
)

func TestResult(t *testing.T) {
	ms := time.Millisecond
	r := &Result{
		Name: "s", Layout: "own", Workers: 4, Hold: ms, Elapsed: time.Second,
		Waits:      []time.Duration{1 * ms, 2 * ms, 3 * ms, 4 * ms, 5 * ms, 6 * ms, 7 * ms, 8 * ms, 9 * ms, 10 * ms},
		Holds:      []time.Duration{ms, ms, ms, ms, ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms, 2 * ms},
		PerWorker:  []int{4, 3, 2, 1},
		Commands:   map[string]int64{"evalsha": 30, "blmove": 10},
		Requests:   40,
		RoundTrips: 30,
		CPU:        500 * time.Microsecond,
		Mallocs:    250,
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Throughput", r.Throughput(), 10.0},
		{"Wait(0.5)", r.Wait(0.5), 6 * ms},
		{"Wait(0.99)", r.Wait(0.99), 10 * ms},
		{"MaxWait", r.MaxWait(), 10 * ms},
		{"FairBound", r.FairBound(), 400 * ms},
		{"CommandsPerAcquisition", r.CommandsPerAcquisition(), 4.0},
		{"RequestsPerAcquisition", r.RequestsPerAcquisition(), 4.0},
		{"RoundTripsPerAcquisition", r.RoundTripsPerAcquisition(), 3.0},
		{"CPUPerAcquisition", r.CPUPerAcquisition(), 50 * time.Microsecond},
		{"MallocsPerAcquisition", r.MallocsPerAcquisition(), 25.0},
		{"Starved", r.Starved(), true}, // 1 < 2.5/2
		{"MeanHold", r.MeanHold(), 1500 * time.Microsecond},
		{"Gap", r.Gap(), 98500 * time.Microsecond}, // 1s/10 - 1.5ms
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var b strings.Builder
	if err := WriteTable(&b, []*Result{r}); err != nil {
		t.Fatal(err)
	}
	if want := "| s | 4 | own | 10 | 6ms | 10ms | 10ms | 400ms | 0.03 | 1–4 | 4.00 | 4.0 | 50µs |"; !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nwant a row starting %q", b.String(), want)
	}
	empty := &Result{Requests: -1, RoundTrips: -1}
	if empty.Wait(0.5) != 0 || empty.FairBound() != 0 || empty.RequestsPerAcquisition() != -1 || empty.RoundTripsPerAcquisition() != -1 || empty.MeanHold() != 0 || empty.Gap() != 0 {
		t.Error("an empty result does not report zeros")
	}
}

func TestQuantile(t *testing.T) {
	for _, tc := range []struct {
		n    int
		p    float64
		want time.Duration
	}{
		{1, 0.99, 1}, {2, 0.5, 2}, {100, 0.99, 99}, {100, 0.5, 51}, {100, 1, 100}, {100, 0, 1},
	} {
		s := make([]time.Duration, tc.n)
		for i := range s {
			s[i] = time.Duration(i + 1)
		}
		if got := quantile(s, tc.p); got != tc.want {
			t.Errorf("quantile(1..%d, %v) = %v, want %v", tc.n, tc.p, got, tc.want)
		}
	}
}

func TestCounter(t *testing.T) {
	var c Counter
	c.Add(1)
	c.Add(2) // a pipeline of two
	if got, want := c.Count(), int64(3); got != want {
		t.Errorf("Count = %d, want %d", got, want)
	}
	if got, want := c.RoundTrips(), int64(2); got != want {
		t.Errorf("RoundTrips = %d, want %d", got, want)
	}
}
