package main

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"

	"github.com/redislock/redislock/bench/contention"
)

// The chart's palette: this library first, then the others in order.
var palette = []string{"#1f6fd1", "#e8822a", "#3a9a48", "#8c5bbf", "#b04a4a"}

// series is one library's values, one per group.
type series struct {
	name   string
	color  string
	values []float64 // bar heights
	ticks  []float64 // a tick across each bar (0: none)
	dots   []float64 // a circle above each bar (0: none)
	labels []string  // text above each bar
}

// writeChart writes an SVG of the hot-key runs: the wait (p99 bars, p50
// ticks, log scale) and the acquisitions per second, by library, for each
// workers × clients configuration.
func writeChart(w *strings.Builder, r *report) {
	var groups []string
	for _, c := range hotConfigs[:len(r.Hot)] {
		groups = append(groups, c.Short())
	}
	var waits, tput []series
	if len(r.Hot) > 0 {
		for li, run := range r.Hot[0] {
			color := palette[li%len(palette)]
			ws := series{name: run.Library, color: color}
			ts := series{name: run.Library, color: color}
			for ci := range r.Hot {
				if li >= len(r.Hot[ci]) {
					continue
				}
				x := r.Hot[ci][li]
				p99 := x.Wait(0.99)
				ws.values = append(ws.values, p99.Seconds())
				ws.ticks = append(ws.ticks, x.Wait(0.5).Seconds())
				ws.dots = append(ws.dots, x.MaxWait().Seconds())
				ws.labels = append(ws.labels, shortDuration(p99))
				ts.values = append(ts.values, x.Throughput())
				ts.labels = append(ts.labels, fmt.Sprintf("%.0f", x.Throughput()))
			}
			waits = append(waits, ws)
			tput = append(tput, ts)
		}
	}

	const (
		width  = 960.0
		height = 700.0
	)
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	p(`<text x="20" y="28" font-size="18" font-weight="bold">One hot key, each worker holding it 1 ms: wait and throughput by library</text>` + "\n")
	p(`<text x="20" y="48" font-size="12" fill="#555">%s</text>`+"\n", html.EscapeString(fmt.Sprintf("%s · %s, %d cores · %s · %s · workers × clients (own: a client each; shared: one client)",
		r.Env.Date.Format("2006-01-02"), r.Env.CPU, r.Env.Cores, r.Env.Go, r.Env.Redis)))
	// Legend.
	x := 20.0
	for _, s := range waits {
		p(`<rect x="%.1f" y="62" width="12" height="12" fill="%s"/>`+"\n", x, s.color)
		p(`<text x="%.1f" y="72" font-size="12">%s</text>`+"\n", x+16, html.EscapeString(s.name))
		x += 24 + 7*float64(len(s.name))
	}
	p(`<line x1="%.1f" y1="68" x2="%.1f" y2="68" stroke="#000" stroke-width="2"/>`+"\n", x, x+12)
	p(`<text x="%.1f" y="72" font-size="12">p50</text>`+"\n", x+16)
	x += 52
	p(`<circle cx="%.1f" cy="68" r="4" fill="none" stroke="#000" stroke-width="1.5"/>`+"\n", x+6)
	p(`<text x="%.1f" y="72" font-size="12">max</text>`+"\n", x+16)

	logPanel(&b, 70, 100, width-100, 250, "Wait, Obtain called → lock held: p99 (bar), p50 (tick), max (circle); log scale — lower is better", groups, waits)
	linearPanel(&b, 70, 420, width-100, 230, "Acquisitions per second — higher is better", groups, tput)
	p("</svg>\n")
	w.WriteString(b.String())
}

// logPanel draws grouped bars of seconds on a log scale.
func logPanel(b *strings.Builder, x0, y0, w, h float64, title string, groups []string, ss []series) {
	lo, hi := 1e-5, 1e-2
	for _, s := range ss {
		for i, v := range s.values {
			hi = math.Max(hi, math.Max(v, s.dots[i]))
			if t := s.ticks[i]; t > 0 {
				lo = math.Min(lo, t)
			}
		}
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi)))
	y := func(v float64) float64 {
		v = math.Max(v, lo)
		return y0 + h - h*(math.Log10(v)-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))
	}
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<text x="%.1f" y="%.1f" font-size="14" font-weight="bold">%s</text>`+"\n", x0-50, y0-12, html.EscapeString(title))
	for d := lo; d <= hi*1.001; d *= 10 {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y(d), x0+w, y(d))
		p(`<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#555">%s</text>`+"\n", x0-6, y(d)+4, shortDuration(time.Duration(d*1e9)))
	}
	bars(b, x0, w, groups, ss, y, y0+h)
}

// linearPanel draws grouped bars on a linear scale from zero.
func linearPanel(b *strings.Builder, x0, y0, w, h float64, title string, groups []string, ss []series) {
	hi := 1.0
	for _, s := range ss {
		for _, v := range s.values {
			hi = math.Max(hi, v)
		}
	}
	step := niceStep(hi / 5)
	top := math.Ceil(hi*1.12/step) * step
	y := func(v float64) float64 { return y0 + h - h*v/top }
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(`<text x="%.1f" y="%.1f" font-size="14" font-weight="bold">%s</text>`+"\n", x0-50, y0-12, html.EscapeString(title))
	for v := 0.0; v <= top+step/2; v += step {
		p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y(v), x0+w, y(v))
		p(`<text x="%.1f" y="%.1f" font-size="11" text-anchor="end" fill="#555">%.0f</text>`+"\n", x0-6, y(v)+4, v)
	}
	bars(b, x0, w, groups, ss, y, y0+h)
}

// bars draws the groups' bars, their ticks and labels, and the group names
// under the axis at base.
func bars(b *strings.Builder, x0, w float64, groups []string, ss []series, y func(float64) float64, base float64) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	gw := w / float64(max(len(groups), 1))
	bw := gw * 0.8 / float64(max(len(ss), 1))
	for gi, g := range groups {
		gx := x0 + float64(gi)*gw + gw*0.1
		for si, s := range ss {
			if gi >= len(s.values) {
				continue
			}
			bx := gx + float64(si)*bw
			top := y(s.values[gi])
			p(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", bx+1, top, bw-2, math.Max(base-top, 0), s.color)
			if s.ticks != nil && s.ticks[gi] > 0 {
				ty := y(s.ticks[gi])
				p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" stroke-width="2"/>`+"\n", bx+1, ty, bx+bw-1, ty)
			}
			labelY := top - 4
			if s.dots != nil && s.dots[gi] > 0 {
				dy := y(s.dots[gi])
				p(`<circle cx="%.1f" cy="%.1f" r="4" fill="none" stroke="#000" stroke-width="1.5"/>`+"\n", bx+bw/2, dy)
				if dy > top-18 {
					// The circle sits on the bar's top: the label goes above it.
					labelY = dy - 7
				}
			}
			p(`<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`+"\n", bx+bw/2, labelY, html.EscapeString(s.labels[gi]))
		}
		p(`<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle">%s</text>`+"\n", x0+float64(gi)*gw+gw/2, base+18, html.EscapeString(g))
	}
	p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x0, base, x0+w, base)
	p(`<text x="%.1f" y="%.1f" font-size="11" fill="#555" text-anchor="middle">workers, clients</text>`+"\n", x0+w/2, base+34)
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// shortDuration formats d compactly for the chart: 85ms, 1.2s, 40µs.
func shortDuration(d time.Duration) string {
	r := contention.Round(d)
	switch {
	case r >= time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", r.Seconds()), ".0") + "s"
	case r >= time.Millisecond:
		ms := float64(r) / 1e6
		if ms >= 10 {
			return fmt.Sprintf("%.0fms", ms)
		}
		return strings.TrimSuffix(fmt.Sprintf("%.1f", ms), ".0") + "ms"
	default:
		return fmt.Sprintf("%.0fµs", float64(r)/1e3)
	}
}
