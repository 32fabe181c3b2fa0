package chaos_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/redislock/redislock/chaos"
	"github.com/redislock/redislock/internal/redistest"
)

// long selects the long schedules (make chaos): more runs, longer runs,
// more clients, and the full load test.
var long = flag.Bool("chaos.long", false, "run the long fault schedules and the full load test, and print the results table")

func TestMain(m *testing.M) {
	flag.Parse()
	code := redistest.Run(m)
	if rows := results.rows(); len(rows) > 0 {
		mode := "short"
		if *long {
			mode = "long"
		}
		fmt.Printf("\nchaos results (%s schedules)\n%s", mode, chaos.FormatTable(rows))
		for _, line := range results.notes() {
			fmt.Println(line)
		}
	}
	os.Exit(code)
}

// results collects the reports of every run, by fault kind, for the table.
var results resultTable

type resultTable struct {
	mu    sync.Mutex
	order []string
	byKey map[string]*chaos.Row
	extra []string
}

func (r *resultTable) add(kind string, rep chaos.Report, netErrs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byKey == nil {
		r.byKey = map[string]*chaos.Row{}
	}
	row := r.byKey[kind]
	if row == nil {
		row = &chaos.Row{Kind: kind}
		r.byKey[kind] = row
		r.order = append(r.order, kind)
	}
	row.Runs++
	row.NetErrors += netErrs
	rep.Violations = nil
	row.Add(rep)
}

// note adds a line printed after the table.
func (r *resultTable) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.extra = append(r.extra, fmt.Sprintf(format, args...))
}

func (r *resultTable) rows() []chaos.Row {
	r.mu.Lock()
	defer r.mu.Unlock()
	rows := make([]chaos.Row, 0, len(r.order))
	for _, k := range r.order {
		rows = append(rows, *r.byKey[k])
	}
	slices.SortStableFunc(rows, func(a, b chaos.Row) int { return kindRank(a.Kind) - kindRank(b.Kind) })
	return rows
}

func (r *resultTable) notes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.extra)
}
