package contention

import (
	"fmt"
	"io"
	"time"
)

// WriteTable writes results as a Markdown table, one row per result, in
// order: acquisitions per second; wait (Obtain called → lock held) p50,
// p99 and max; the fair-queue bound (workers × mean time per acquisition)
// and p99's ratio to it; acquisitions per worker, fewest–most; requests
// (client round trips) and Redis commands (INFO commandstats, script
// internals included) per acquisition; the server's CPU time (user + sys)
// per acquisition; the median PING round trip during the run.
func WriteTable(w io.Writer, results []*Result) error {
	if _, err := fmt.Fprintln(w, "| strategy | workers | clients | acq/s | wait p50 | wait p99 | wait max | fair bound | p99/bound | per worker min–max | requests/acq | commands/acq | Redis CPU/acq | PING p50 |"); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"); err != nil {
		return err
	}
	for _, r := range results {
		lo, hi := r.MinMax()
		reqs := "–"
		if q := r.RequestsPerAcquisition(); q >= 0 {
			reqs = fmt.Sprintf("%.2f", q)
		}
		ratio := 0.0
		if b := r.FairBound(); b > 0 {
			ratio = float64(r.Wait(0.99)) / float64(b)
		}
		_, err := fmt.Fprintf(w, "| %s | %d | %s | %.0f | %s | %s | %s | %s | %.2f | %d–%d | %s | %.1f | %s | %s |\n",
			r.Name, r.Workers, r.Layout, r.Throughput(),
			Round(r.Wait(0.5)), Round(r.Wait(0.99)), Round(r.MaxWait()),
			Round(r.FairBound()), ratio, lo, hi, reqs, r.CommandsPerAcquisition(), Round(r.CPUPerAcquisition()), Round(r.Ping))
		if err != nil {
			return err
		}
	}
	return nil
}

// Round returns d with three significant digits, for display.
func Round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
