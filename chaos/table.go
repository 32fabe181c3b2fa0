package chaos

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Row is one line of a results table: the summed reports of the runs of one
// fault kind.
type Row struct {
	Kind      string
	Runs      int
	NetErrors int64 // commands and dials of the clients that failed other than with a Redis reply
	Report
}

// FormatTable formats rows as an aligned text table with one column per
// count of [Report]. Columns: runs; ops (client calls and writes); obtains
// (acquisitions); net errors (see [Row]); failed (lock calls with an
// unknown outcome); overlaps;
// held-obtain (obtained while held); lost-early; token-order; stale
// accepted; stale refused; honest refused (refused inside the writer's
// validity).
func FormatTable(rows []Row) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "fault kind\truns\tops\tobtains\tnet errors\tfailed\toverlaps\theld-obtain\tlost-early\ttoken-order\tstale accepted\tstale refused\thonest refused\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n",
			r.Kind, r.Runs, r.Ops, r.Obtains, r.NetErrors, r.Failed, r.Overlaps, r.ObtainedWhileHeld, r.LostEarly, r.TokenOrder,
			r.StaleAccepted, r.StaleRefused, r.HonestRefused)
	}
	_ = w.Flush()
	return b.String()
}
