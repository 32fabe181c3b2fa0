package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redislock/redislock/bench/contention"
)

// summaryRow is one row of the table of issue 15: this library's figure,
// the best peer's where there is one, the target and whether it is met.
type summaryRow struct {
	What, Ours, Peer, Target string
	Met                      *bool // nil: nothing to meet ("keep")
}

// peers returns the micro rows of the other libraries (not the floors,
// not this library's rows).
func (r *report) peers() []*microRow {
	var out []*microRow
	for i := range r.Micro {
		row := &r.Micro[i]
		if row.IsPing || row.IsThisRepo || row.IsFloor || row.Name == intFloorName || row.Name == fencedFloorName || row.Name == perLockFloorName {
			continue
		}
		out = append(out, row)
	}
	return out
}

// bestPeer returns the peer whose figure get gives the lowest value, and
// that value (nil, 0 when none has it).
func (r *report) bestPeer(get func(*microRow) (float64, bool)) (*microRow, float64) {
	var best *microRow
	var v float64
	for _, row := range r.peers() {
		if x, ok := get(row); ok && (best == nil || x < v) {
			best, v = row, x
		}
	}
	return best, v
}

func met(ok bool) *bool { return &ok }

// summary returns the rows of issue 15's table, from this run's figures.
func (r *report) summary() []summaryRow {
	var out []summaryRow
	floor, ours, fenced, intFloor := r.floor(), r.row(oursName), r.row(fencedName), r.row(intFloorName)
	fencedFloor, perLock := r.row(fencedFloorName), r.row(perLockFloorName)
	if floor == nil || ours == nil {
		return nil
	}
	timeRatio := func(f func(*microRow) *figure) func(*microRow) (float64, bool) {
		return func(row *microRow) (float64, bool) {
			x, fl := f(row), f(floor)
			if x == nil || fl == nil || fl.NsPerOp == 0 {
				return 0, false
			}
			return x.NsPerOp / fl.NsPerOp, true
		}
	}
	one := func(row *microRow) *figure { return row.Obtain1 }
	many := func(row *microRow) *figure { return row.ObtainN }
	peerText := func(get func(*microRow) (float64, bool)) string {
		if p, v := r.bestPeer(get); p != nil {
			return fmt.Sprintf("%s %.2f×", p.Name, v)
		}
		return "—"
	}
	cost := func(f *figure) string {
		return fmt.Sprintf("Redis CPU %s µs/op, %.1f commands", us(f.Server.CPU), f.Server.Commands)
	}
	if q, ok := timeRatio(one)(ours); ok {
		out = append(out, summaryRow{"Obtain+Release, 1 goroutine, ÷ raw go-redis floor", fmt.Sprintf("%.2f×", q), peerText(timeRatio(one)), "≤ 1.05×", met(q <= 1.05)})
	}
	if q, ok := timeRatio(many)(ours); ok {
		out = append(out, summaryRow{fmt.Sprintf("same, %d goroutines", parallelGoroutines), fmt.Sprintf("%.2f× (%s; floor %s)", q, cost(ours.ObtainN), cost(floor.ObtainN)), peerText(timeRatio(many)), "—", nil})
	}
	// The floor of a fenced lock beside ours: the least a fenced obtain
	// with the same guarantee costs in a script; and the same with a
	// token generated for each lock, the least a library adds to it.
	atFencedFloor := func(get func(*microRow) *figure, withCost bool) string {
		if fencedFloor == nil {
			return ""
		}
		q, ok := timeRatio(get)(fencedFloor)
		if !ok {
			return ""
		}
		s := fmt.Sprintf("fenced floor %.2f×", q)
		if withCost {
			s += ", " + cost(get(fencedFloor))
		}
		if perLock != nil {
			if t, ok := timeRatio(get)(perLock); ok {
				s += fmt.Sprintf("; with a token per lock %.2f×", t)
			}
		}
		if withCost {
			return "; " + s
		}
		return " (" + s + ")"
	}
	if fenced != nil {
		if q, ok := timeRatio(one)(fenced); ok {
			out = append(out, summaryRow{"same with `FenceKey`, 1 goroutine", fmt.Sprintf("%.2f×%s", q, atFencedFloor(one, false)), "—", "≤ 1.05×", met(q <= 1.05)})
		}
		if q, ok := timeRatio(many)(fenced); ok {
			out = append(out, summaryRow{fmt.Sprintf("same with `FenceKey`, %d goroutines", parallelGoroutines), fmt.Sprintf("%.2f× (%s%s)", q, cost(fenced.ObtainN), atFencedFloor(many, true)), "—", "≤ 1.08×", met(q <= 1.08)})
		}
	}
	if ours.Failed != nil && intFloor != nil && intFloor.Failed != nil {
		p, v := r.bestPeer(func(row *microRow) (float64, bool) {
			if row.Failed == nil {
				return 0, false
			}
			return row.Failed.AllocsPerOp, true
		})
		peer := "—"
		if p != nil {
			peer = fmt.Sprintf("%s %s", p.Name, count(v))
		}
		out = append(out, summaryRow{fmt.Sprintf("failed Obtain, allocs (floor script replying an integer: %s)", count(intFloor.Failed.AllocsPerOp)),
			count(ours.Failed.AllocsPerOp), peer, "≤ floor", met(ours.Failed.AllocsPerOp <= intFloor.Failed.AllocsPerOp+0.5)})
	}
	r.summaryHot(&out)
	for _, n := range r.Native {
		q := float64(n.Native.CommandTime) / float64(n.Script.CommandTime)
		out = append(out, summaryRow{fmt.Sprintf("%s of a single-key lock, Redis command time: native ÷ script (%s)", n.Op, r.NativeServer),
			fmt.Sprintf("%.2f× (%s vs %s µs, %s vs %s; server CPU %s vs %s µs)", q, us2(n.Native.CommandTime), us2(n.Script.CommandTime), n.Native.Top, n.Script.Top, us(n.Native.CPU), us(n.Script.CPU)), "—", "< 1×", met(q < 1)})
	}
	return out
}

// summaryHot adds the hot-key rows: acquisitions per second against the
// best peer, commands and Redis CPU per acquisition (against redsync's),
// wait p99 against the fair bound.
func (r *report) summaryHot(out *[]summaryRow) {
	var ratios, cmds, cpus, waits, maxes []string
	acqMet, cpuMet := true, true
	for ci, runs := range r.Hot {
		cfg := hotConfigs[ci]
		var o, best, redsync, floor *hotRun
		for i := range runs {
			run := &runs[i]
			switch {
			case run.IsThisRepo:
				o = run
			case run.IsFloor:
				floor = run
			case best == nil || run.Throughput() > best.Throughput():
				best = run
			}
			if run.Library == "redsync" {
				redsync = run
			}
		}
		if o == nil || best == nil {
			continue
		}
		q := o.Throughput() / best.Throughput()
		acqMet = acqMet && q >= 1
		r := fmt.Sprintf("%s %.2f× (%s", cfg.Short(), q, best.Library)
		if floor != nil {
			r += fmt.Sprintf("; fair floor %.2f×", floor.Throughput()/best.Throughput())
		}
		ratios = append(ratios, r+")")
		c := fmt.Sprintf("%s %.1f", cfg.Short(), o.CommandsPerAcquisition())
		if redsync != nil {
			c += fmt.Sprintf(" (redsync %.1f)", redsync.CommandsPerAcquisition())
		}
		cmds = append(cmds, c)
		if redsync != nil && redsync.CPUPerAcquisition() > 0 {
			q := float64(o.CPUPerAcquisition()) / float64(redsync.CPUPerAcquisition())
			cpuMet = cpuMet && q <= 1.2
			c := fmt.Sprintf("%s %s µs, %.2f× redsync's %s µs", cfg.Short(), us(o.CPUPerAcquisition()), q, us(redsync.CPUPerAcquisition()))
			if floor != nil && floor.CPUPerAcquisition() > 0 {
				c += fmt.Sprintf(" (fair floor %s µs, %.2f×)", us(floor.CPUPerAcquisition()), float64(floor.CPUPerAcquisition())/float64(redsync.CPUPerAcquisition()))
			}
			cpus = append(cpus, c)
		}
		fair := o.FairBound()
		if fair > 0 {
			waits = append(waits, fmt.Sprintf("%s %.2f×, max %v", cfg.Short(), float64(o.Wait(0.99))/float64(fair), contention.Round(o.MaxWait())))
		}
		var peerMax []string
		for _, run := range runs {
			if !run.IsThisRepo && !run.IsFloor {
				peerMax = append(peerMax, contention.Round(run.MaxWait()).String())
			}
		}
		maxes = append(maxes, cfg.Short()+" "+strings.Join(peerMax, "/"))
	}
	if ratios == nil {
		return
	}
	*out = append(*out,
		summaryRow{"hot key, `WaitForRelease`, acquisitions/s ÷ best peer (workers, clients)", strings.Join(ratios, "; "), "bsm / redsync / rueidislock", "≥ 1.00×", met(acqMet)},
		summaryRow{"hot key, `WaitForRelease`, Redis commands per acquisition", strings.Join(cmds, "; "), "redsync", "fewer", nil},
	)
	if cpus != nil {
		*out = append(*out, summaryRow{"hot key, `WaitForRelease`, Redis CPU per acquisition (INFO cpu over the run)", strings.Join(cpus, "; "), "redsync", "≤ 1.2× redsync's", met(cpuMet)})
	}
	*out = append(*out,
		summaryRow{"hot key, `WaitForRelease`, wait p99 ÷ fair bound; max wait", strings.Join(waits, "; "), "max wait of bsm/redsync/rueidislock: " + strings.Join(maxes, "; "), "keep", nil},
	)
}

// writeSummary writes the table of issue 15.
func (r *report) writeSummary(w io.Writer) {
	rows := r.summary()
	if rows == nil {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Issue 15 in this run\n\n")
	p("Each row from the workloads below, of this one run: times ÷ the raw go-redis floor of the same turns\n")
	p("(section 1), allocations from section 2, the hot key from section 4, native commands from section 8.\n")
	p("Redis CPU per operation: INFO cpu of the server over %d operations of one library at a time.\n\n", countedOps)
	p("| | ours | best peer | target | met |\n|---|---|---|---|---|\n")
	for _, row := range rows {
		m := "keep"
		if row.Met != nil {
			m = "met"
			if !*row.Met {
				m = "**missed**"
			}
		}
		p("| %s | %s | %s | %s | %s |\n", row.What, row.Ours, row.Peer, row.Target, m)
	}
	p("\n")
}

// us2 formats a duration in µs with two decimals.
func us2(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Microsecond)) }

// us formats a duration in µs with one decimal.
func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }
