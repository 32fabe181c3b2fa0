package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

const statusHelp = `usage: redislock status [flags] KEY...

Shows, for each KEY, whether the lock is held, for how long still, the
holder's metadata (hostname:pid for "redislock run"), its token and the
fencing token of its acquisition; with --fence-key, the fencing counter too.
It reads without changing anything. A key held in another format (by
bsm/redislock, or not a lock at all) is shown as held, "foreign". A KEY
that is a semaphore ("redislock run --limit N") shows one line for each
live permit, with its holder's metadata, TTL, token and fencing token; a
KEY that shared runs hold ("redislock run --shared") one line for each
shared hold, likewise.

On a quorum (--redis given 3, 5 or more times) each KEY is shown as the
masters' majority sees it: held when a majority hold it with one token,
for as long as a majority still will, with the highest fencing token
among them; HELD says on how many masters ("yes (3/3 masters)"), --json
adds "masters": {"held", "answered", "of"}, and --fence-key shows the
highest of the masters' counters. A master that does not answer is named
on stderr; fewer than a majority answering exits 69. Semaphores and shared
holds are not looked for on a quorum.

The token lets anyone release the lock ("redislock release"): the table
shows its first 8 characters unless --show-token; --json shows all of it.

JSON (--json), one object:
  {"locks": [{"key": "...", "held": true, "foreign": false, "ttl_ms": 28412,
              "token": "...", "metadata": "host:1234", "fence_token": 17,
              "semaphore": false, "permits": [...]}],
   "fence_key": "...", "fence_counter": 17}
ttl_ms is 0 for a key not held and -1 for a key without expiry; fence_key
and fence_counter appear with --fence-key only (the counter is 0 before the
first fenced acquisition). For a semaphore, "semaphore" is true, "held"
says whether any permit is live, and "permits" lists them, each as
{"token", "metadata", "fence_token", "ttl_ms"}, the first to expire first;
the other fields of the key are empty. For a KEY that shared runs hold,
"held" is false (no exclusive run holds it) and "shared" lists the shared
holds in the same form as "permits".

Exit status:
  0   every key was read (held or not)
  69  Redis could not be reached or failed; --redis-error-exit-code changes it
  1   a URL that does not parse, a file that cannot be read
  2   a usage error

Examples:
  redislock status nightly-report
  redislock status --fence-key '{migrate}:fence' '{migrate}:lock'
  redislock status --json job-a job-b | jq '.locks[] | select(.held) | .key'`

// statusReport is the JSON of "status --json".
type statusReport struct {
	Locks        []lockStatus `json:"locks"`
	FenceKey     string       `json:"fence_key,omitempty"`
	FenceCounter *int64       `json:"fence_counter,omitempty"`
}

// lockStatus is one key of a statusReport.
type lockStatus struct {
	Key        string `json:"key"`
	Held       bool   `json:"held"`
	Foreign    bool   `json:"foreign"`
	TTLms      int64  `json:"ttl_ms"`
	Token      string `json:"token"`
	Metadata   string `json:"metadata"`
	FenceToken int64  `json:"fence_token"`
	// Semaphore: the key is a semaphore, whose live permits are Permits.
	Semaphore bool           `json:"semaphore,omitempty"`
	Permits   []permitStatus `json:"permits,omitempty"`
	// Shared lists the live shared holds of KEY ("run --shared").
	Shared []permitStatus `json:"shared,omitempty"`
	// Masters, on a quorum (several --redis), counts the masters that hold
	// KEY as shown, that answered, and that make the quorum.
	Masters *mastersCount `json:"masters,omitempty"`
}

// permitStatus is one live permit of a semaphore key.
type permitStatus struct {
	Token      string `json:"token"`
	Metadata   string `json:"metadata"`
	FenceToken int64  `json:"fence_token"`
	TTLms      int64  `json:"ttl_ms"`
}

// statusOptions are the flags of "status".
type statusOptions struct {
	asJSON    bool
	fenceKey  string
	showToken bool
	conn      *connFlags
}

// newStatusFlags defines the flags of "status". It is also what the
// completion scripts list.
func newStatusFlags() (*flag.FlagSet, *statusOptions) {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	o := &statusOptions{}
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object (see above)")
	fs.StringVar(&o.fenceKey, "fence-key", "", "also show the fencing counter `KEY`")
	fs.BoolVar(&o.showToken, "show-token", false, "show whole tokens in the table")
	o.conn = addConnFlags(fs)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", statusHelp)
		printFlags(fs.Output(), fs, nil)
		_, _ = fmt.Fprintf(fs.Output(), "\n%s\n", connHelp)
	}
	return fs, o
}

// runStatus is the "status" subcommand.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "redislock status"
	fs, o := newStatusFlags()
	asJSON, fenceKey, showToken, conn := &o.asJSON, &o.fenceKey, &o.showToken, o.conn
	keys, code, ok := parseInterspersed(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	var err error
	if len(keys) == 0 {
		return usageFailure(stderr, "status", "missing KEY")
	}
	for _, k := range keys {
		if k == "" {
			return usageFailure(stderr, "status", "empty KEY")
		}
	}
	if msg := conn.check(); msg != "" {
		return usageFailure(stderr, "status", msg)
	}

	var report *statusReport
	if conn.quorum() {
		q, code, ok := conn.dialQuorum(ctx, prog, stderr, time.Time{}, nil)
		if !ok {
			return code
		}
		defer q.close()
		qctx, cancel := context.WithTimeout(ctx, redisTimeout)
		defer cancel()
		warn := func(format string, args ...any) {
			_, _ = fmt.Fprintf(stderr, "%s: %s\n", prog, fmt.Sprintf(format, args...))
		}
		report, err = readQuorumStatus(qctx, q, keys, *fenceKey, warn)
	} else {
		rdb, code, ok := conn.connect(ctx, prog, stderr)
		if !ok {
			return code
		}
		defer func() { _ = rdb.Close() }()
		sctx, cancel := context.WithTimeout(ctx, redisTimeout)
		defer cancel()
		report, err = readStatus(sctx, rdb, keys, *fenceKey)
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return conn.errorCode
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			_, _ = fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return exitFailure
		}
		return exitOK
	}
	printStatus(stdout, report, *showToken)
	return exitOK
}

// readStatus inspects every key, and reads the fence counter when fenceKey
// is not empty.
func readStatus(ctx context.Context, rdb redis.UniversalClient, keys []string, fenceKey string) (*statusReport, error) {
	locker := redislock.New(rdb)
	report := &statusReport{Locks: make([]lockStatus, 0, len(keys))}
	for _, k := range keys {
		info, err := locker.Inspect(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", k, err)
		}
		if info.Held && info.Foreign && info.TTL > 0 {
			if s, ok := semaphoreStatus(ctx, locker, k); ok {
				report.Locks = append(report.Locks, s)
				continue
			}
		}
		s := lockStatus{
			Key:        k,
			Held:       info.Held,
			Foreign:    info.Foreign,
			TTLms:      info.TTL.Milliseconds(),
			Token:      info.Token,
			Metadata:   info.Metadata,
			FenceToken: info.FenceToken,
		}
		if !info.Held {
			holds, err := sharedHolds(ctx, rdb, k)
			if err != nil && !isNoPerm(err) { // an ACL that refuses them: no shared runs either
				return nil, fmt.Errorf("read the shared holds of %s: %w", k, err)
			}
			for _, h := range holds {
				s.Shared = append(s.Shared, permitStatus{Token: h.Token, Metadata: h.Metadata, FenceToken: h.FenceToken, TTLms: h.TTL.Milliseconds()})
			}
		}
		report.Locks = append(report.Locks, s)
	}
	if fenceKey != "" {
		counter, err := fenceCounter(ctx, rdb, fenceKey)
		if err != nil {
			return nil, err
		}
		report.FenceKey, report.FenceCounter = fenceKey, &counter
	}
	return report, nil
}

// semaphoreStatus reads key as a semaphore: ok is false when it is not one
// (the script finds another type of key, or the read fails: the key is then
// shown as Inspect saw it). A semaphore's keys always have an expiry, so
// only foreign keys with one are tried.
func semaphoreStatus(ctx context.Context, locker *redislock.Client, key string) (lockStatus, bool) {
	holders, err := locker.Semaphore(key, 1).Holders(ctx)
	if err != nil {
		return lockStatus{}, false
	}
	s := lockStatus{Key: key, Held: len(holders) > 0, Semaphore: true}
	for _, h := range holders {
		s.Permits = append(s.Permits, permitStatus{Token: h.Token, Metadata: h.Metadata, FenceToken: h.FenceToken, TTLms: h.TTL.Milliseconds()})
	}
	return s, true
}

// fenceCounter returns the value of the fencing counter key: 0 when it does
// not exist.
func fenceCounter(ctx context.Context, rdb redis.UniversalClient, key string) (int64, error) {
	v, err := rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read fence key %s: %w", key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fence key %s holds %q, not a fencing counter", key, v)
	}
	return n, nil
}

// printStatus writes report as a table.
func printStatus(w io.Writer, report *statusReport, showToken bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "KEY\tHELD\tTTL\tMETADATA\tTOKEN\tFENCE TOKEN")
	for _, l := range report.Locks {
		switch {
		case l.Semaphore && !l.Held:
			_, _ = fmt.Fprintf(tw, "%s\tno (semaphore)\t-\t-\t-\t-\n", l.Key)
		case l.Semaphore:
			for i, p := range l.Permits {
				token := p.Token
				if !showToken {
					token = shorten(token, 8)
				}
				_, _ = fmt.Fprintf(tw, "%s\tpermit %d/%d\t%s\t%s\t%s\t%s\n", l.Key, i+1, len(l.Permits), formatTTL(p.TTLms), strconv.Quote(p.Metadata), token, fenceText(p.FenceToken))
			}
		case len(l.Shared) > 0:
			for i, p := range l.Shared {
				token := p.Token
				if !showToken {
					token = shorten(token, 8)
				}
				_, _ = fmt.Fprintf(tw, "%s\tshared %d/%d\t%s\t%s\t%s\t%s\n", l.Key, i+1, len(l.Shared), formatTTL(p.TTLms), strconv.Quote(p.Metadata), token, fenceText(p.FenceToken))
			}
		case !l.Held:
			_, _ = fmt.Fprintf(tw, "%s\tno%s\t-\t-\t-\t-\n", l.Key, mastersText(l.Masters, ""))
		case l.Foreign:
			_, _ = fmt.Fprintf(tw, "%s\tyes (foreign%s)\t%s\t-\t-\t-\n", l.Key, mastersText(l.Masters, ", "), formatTTL(l.TTLms))
		default:
			token := l.Token
			if !showToken {
				token = shorten(token, 8)
			}
			_, _ = fmt.Fprintf(tw, "%s\tyes%s\t%s\t%s\t%s\t%s\n", l.Key, mastersText(l.Masters, ""), formatTTL(l.TTLms), strconv.Quote(l.Metadata), token, fenceText(l.FenceToken))
		}
	}
	_ = tw.Flush()
	if report.FenceCounter != nil {
		_, _ = fmt.Fprintf(w, "fence counter %s: %d\n", report.FenceKey, *report.FenceCounter)
	}
}

// mastersText says on how many masters of a quorum a key is held as shown,
// " (3/3 masters)" (after sep instead of " (" and without ")" when sep is
// not ""), or "" off a quorum.
func mastersText(m *mastersCount, sep string) string {
	switch {
	case m == nil:
		return ""
	case sep != "":
		return fmt.Sprintf("%s%d/%d masters", sep, m.Held, m.Of)
	}
	return fmt.Sprintf(" (%d/%d masters)", m.Held, m.Of)
}

// fenceText formats a fencing token, "-" for none.
func fenceText(f int64) string {
	if f == 0 {
		return "-"
	}
	return strconv.FormatInt(f, 10)
}

// formatTTL formats a remaining TTL in milliseconds, -1 meaning none.
func formatTTL(ms int64) string {
	if ms < 0 {
		return "no expiry"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// shorten returns the first n bytes of s followed by "…", or s when it is
// no longer than that.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
