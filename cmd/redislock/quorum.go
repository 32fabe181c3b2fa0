package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// A quorum: --redis given several times names independent masters, and
// the commands hold and read locks on a majority of them (the library's
// Quorum; docs/quorum.md, docs/cli.md "Quorum").

// urlList is the [flag.Value] of --redis: each use adds a URL.
type urlList []string

func (u *urlList) Set(s string) error {
	*u = append(*u, s)
	return nil
}

func (u *urlList) String() string {
	if u == nil {
		return ""
	}
	return strings.Join(*u, " ")
}

// first returns the one URL of --redis, or "" when none was given.
func (u urlList) first() string {
	if len(u) == 0 {
		return ""
	}
	return u[0]
}

// quorum reports whether the flags name a quorum: --redis given more than
// once.
func (c *connFlags) quorum() bool { return len(c.urls) > 1 }

// checkQuorum returns what is wrong with the flags of a quorum, or "".
func (c *connFlags) checkQuorum() string {
	n := len(c.urls)
	switch {
	case n <= 1:
		return ""
	case n < 3 || n%2 == 0:
		return fmt.Sprintf("--redis given %d times: a quorum needs an odd number of masters, at least 3", n)
	case c.cluster:
		return "--cluster cannot be used with several --redis (a quorum of independent masters)"
	case c.sentinelMaster != "":
		return "--sentinel-master cannot be used with several --redis (a quorum of independent masters)"
	}
	return ""
}

// majority returns how many of n masters make a majority.
func majority(n int) int { return n/2 + 1 }

// quorumEndpoints resolves each --redis of a quorum into the endpoint of
// one standalone master, with the password and TLS flags applied. A URL
// that names several servers, a Sentinel, or a server named twice is a
// usage error; a URL that does not parse is a failure (exit 1).
func (c *connFlags) quorumEndpoints() ([]*endpoint, error) {
	eps := make([]*endpoint, len(c.urls))
	for i, raw := range c.urls {
		source := fmt.Sprintf("--redis #%d", i+1)
		if c.tls {
			var err error
			if raw, err = withTLS(raw); err != nil {
				return nil, err
			}
		}
		_, _, rest := splitUserinfo(raw)
		if host, _, _ := strings.Cut(rest, "/"); strings.Contains(host, ",") {
			return nil, &usageError{source + " lists several servers: in a quorum each --redis names one master"}
		}
		e, err := parseEndpoint(raw, false, "")
		if err != nil {
			var ue *usageError
			if errors.As(err, &ue) {
				return nil, &usageError{source + ": " + ue.msg}
			}
			return nil, fmt.Errorf("%s: %w", source, redactedError(raw, false, ""))
		}
		if e.single == nil {
			return nil, &usageError{source + " is a Sentinel URL: in a quorum each --redis names one standalone master"}
		}
		for j, other := range eps[:i] {
			if other.single.Network == e.single.Network && other.single.Addr == e.single.Addr {
				return nil, &usageError{fmt.Sprintf("--redis #%d and #%d name the same server (%s): a quorum needs distinct masters", j+1, i+1, e)}
			}
		}
		if err := c.applyPassword(e); err != nil {
			return nil, err
		}
		if err := c.applyTLS(e); err != nil {
			return nil, err
		}
		eps[i] = e
	}
	return eps, nil
}

// quorumConn is the masters of a quorum: a client of each, in the order
// of --redis.
type quorumConn struct {
	endpoints []*endpoint
	clients   []redis.UniversalClient
}

// close closes every client.
func (q *quorumConn) close() {
	for _, c := range q.clients {
		_ = c.Close() // nothing to do if it fails
	}
}

// redisClients returns the clients as the library takes them.
func (q *quorumConn) redisClients() []redislock.RedisClient {
	out := make([]redislock.RedisClient, len(q.clients))
	for i, c := range q.clients {
		out[i] = c
	}
	return out
}

// String names the masters, for messages.
func (q *quorumConn) String() string {
	names := make([]string, len(q.endpoints))
	for i, e := range q.endpoints {
		names[i] = strings.TrimPrefix(e.String(), "Redis at ")
	}
	return fmt.Sprintf("the quorum of %d masters (%s)", len(q.endpoints), strings.Join(names, ", "))
}

// dialQuorum is [connFlags.dial] for a quorum: it PINGs every master at
// once and goes on when a majority answers (the others get a client all
// the same: the library counts them out until they answer), retrying
// until until while failures may pass. A master that is a Cluster node is
// a usage error. On failure it has printed one line naming each master
// that failed and returns the exit code.
func (c *connFlags) dialQuorum(ctx context.Context, prog string, stderr io.Writer, until time.Time, note func(string, ...any)) (*quorumConn, int, bool) {
	fail := func(code int, format string, args ...any) (*quorumConn, int, bool) {
		_, _ = fmt.Fprintf(stderr, "%s: %s\n", prog, fmt.Sprintf(format, args...))
		return nil, code, false
	}
	eps, err := c.quorumEndpoints()
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return fail(exitUsage, "%v", err)
		}
		return fail(exitFailure, "%v", err)
	}
	n, need := len(eps), majority(len(eps))
	pause := 50 * time.Millisecond
	for {
		clients := make([]redis.UniversalClient, n)
		errs := make([]error, n)
		cluster := make([]bool, n)
		var wg sync.WaitGroup
		for i, e := range eps {
			wg.Go(func() { clients[i], cluster[i], _, errs[i] = e.ping(ctx) })
		}
		wg.Wait()
		var failures []string
		again := false
		for i, err := range errs {
			switch {
			case err == nil && cluster[i]:
				for _, c := range clients {
					if c != nil {
						_ = c.Close()
					}
				}
				return fail(exitUsage, "--redis #%d, %s, is a Cluster node: a quorum needs independent standalone masters", i+1, eps[i])
			case err != nil:
				again = again || retryable(err)
				failures = append(failures, describeDialError(i, eps[i], err))
			}
		}
		if len(failures) <= n-need {
			for i, e := range eps {
				if clients[i] == nil {
					clients[i] = e.client() // counted out by the library until it answers
				}
			}
			if note != nil && len(failures) > 0 {
				note("going on with %d of the %d masters: %s", n-len(failures), n, strings.Join(failures, "; "))
			}
			return &quorumConn{endpoints: eps, clients: clients}, exitOK, true
		}
		for _, c := range clients {
			if c != nil {
				_ = c.Close()
			}
		}
		if ctx.Err() == nil && again && time.Now().Add(pause).Before(until) {
			if note != nil {
				note("%d of the %d masters cannot be reached (%s); trying again for %v", len(failures), n, strings.Join(failures, "; "), time.Until(until).Round(time.Millisecond))
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			pause = min(2*pause, time.Second)
			continue
		}
		within := ""
		if !until.IsZero() {
			within = " within --wait"
		}
		return fail(c.errorCode, "cannot reach a majority (%d) of the %d masters of the quorum%s: %s", need, n, within, strings.Join(failures, "; "))
	}
}

// describeDialError says why master i, at e, could not be used.
func describeDialError(i int, e *endpoint, err error) string {
	var ne net.Error
	switch {
	case isAuthError(err):
		return fmt.Sprintf("--redis #%d: authentication failed at %s: %v", i+1, e, err)
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("--redis #%d: %s: no answer (%v)%s", i+1, e, err, tlsHint(e, err))
	}
	return fmt.Sprintf("--redis #%d: %s: %v%s", i+1, e, err, tlsHint(e, err))
}

// mastersFailed reports whether err, of an obtain on a quorum, comes from
// masters that failed (unreachable, timed out, a Redis error) rather than
// from the lock held by others: the library's error then wraps theirs
// (redislock.Quorum.ObtainMulti), or the call's context ended.
func mastersFailed(err error) bool {
	var (
		op    *net.OpError
		reply redis.Error
	)
	return errors.As(err, &op) || errors.As(err, &reply) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// inspectAll inspects key on every master at once. An error at a master
// is kept in errs, by master.
func (q *quorumConn) inspectAll(ctx context.Context, key string) (infos []*redislock.LockInfo, errs []error) {
	infos, errs = make([]*redislock.LockInfo, len(q.clients)), make([]error, len(q.clients))
	var wg sync.WaitGroup
	for i, c := range q.clients {
		wg.Go(func() { infos[i], errs[i] = redislock.New(c).Inspect(ctx, key) })
	}
	wg.Wait()
	return infos, errs
}

// quorumView is a key as the majority of a quorum's masters see it.
type quorumView struct {
	status   lockStatus
	answered int // masters that answered
}

// viewOf combines what the masters said of key (infos, nil where errs
// holds the master's error): held when a majority hold it with one token
// (or, foreign, in another format), for the majority's time (the
// majority-th longest TTL of those that hold it, as Quorum's TTL), with
// the highest fencing token among them (a master outside the majority
// that confirmed the token may keep the acquisition's first proposal).
func viewOf(key string, infos []*redislock.LockInfo, errs []error) quorumView {
	n := len(infos)
	v := quorumView{status: lockStatus{Key: key, Masters: &mastersCount{Of: n}}}
	byToken := map[string][]*redislock.LockInfo{}
	var foreign []*redislock.LockInfo
	for i, info := range infos {
		if errs[i] != nil || info == nil {
			continue
		}
		v.answered++
		switch {
		case !info.Held:
		case info.Foreign:
			foreign = append(foreign, info)
		default:
			byToken[info.Token] = append(byToken[info.Token], info)
		}
	}
	v.status.Masters.Answered = v.answered
	var best []*redislock.LockInfo
	for _, token := range slices.Sorted(maps.Keys(byToken)) {
		if len(byToken[token]) > len(best) {
			best = byToken[token]
		}
	}
	group := best
	if len(foreign) > len(best) {
		group = foreign
	}
	v.status.Masters.Held = len(group)
	if len(group) < majority(n) {
		return v
	}
	// The majority-th longest TTL: the time for which a majority still
	// hold it (no expiry, -1, counts as the longest).
	ttls := make([]time.Duration, len(group))
	for i, info := range group {
		ttls[i] = info.TTL
		if info.TTL < 0 {
			ttls[i] = time.Duration(1<<63 - 1)
		}
	}
	slices.Sort(ttls)
	slices.Reverse(ttls)
	ttl := ttls[majority(n)-1]
	if ttl == time.Duration(1<<63-1) {
		ttl = -time.Millisecond
	}
	s := &v.status
	s.Held, s.TTLms = true, ttl.Milliseconds()
	if len(foreign) > len(best) {
		s.Foreign = true
		return v
	}
	s.Token, s.Metadata = group[0].Token, group[0].Metadata
	for _, info := range group {
		s.FenceToken = max(s.FenceToken, info.FenceToken)
	}
	return v
}

// mastersCount is how many masters of a quorum hold a key (with the token
// shown, or in another format when foreign), answered, and make it.
type mastersCount struct {
	Held     int `json:"held"`
	Answered int `json:"answered"`
	Of       int `json:"of"`
}

// readQuorumStatus is readStatus on a quorum: each key as the majority
// of the masters see it ([viewOf]), the fencing counter as the highest of
// the masters' (the highest token they confirmed). It fails when fewer
// than a majority of the masters answer; warn is told of each master that
// did not.
func readQuorumStatus(ctx context.Context, q *quorumConn, keys []string, fenceKey string, warn func(string, ...any)) (*statusReport, error) {
	n := len(q.clients)
	report := &statusReport{Locks: make([]lockStatus, 0, len(keys))}
	warned := make([]bool, n)
	tell := func(i int, what string, err error) {
		if !warned[i] {
			warned[i] = true
			warn("--redis #%d, %s: %s: %v", i+1, q.endpoints[i], what, err)
		}
	}
	tooFew := func(what string, errs []error) error {
		var failed []string
		for i, err := range errs {
			if err != nil {
				failed = append(failed, fmt.Sprintf("--redis #%d: %v", i+1, err))
			}
		}
		return fmt.Errorf("%s: fewer than a majority (%d) of the %d masters answered: %s", what, majority(n), n, strings.Join(failed, "; "))
	}
	for _, k := range keys {
		infos, errs := q.inspectAll(ctx, k)
		v := viewOf(k, infos, errs)
		if v.answered < majority(n) {
			return nil, tooFew("inspect "+k, errs)
		}
		for i, err := range errs {
			if err != nil {
				tell(i, "inspect "+k, err)
			}
		}
		report.Locks = append(report.Locks, v.status)
	}
	if fenceKey != "" {
		var (
			highest  int64
			answered int
			errs     = make([]error, n)
		)
		for i, c := range q.clients {
			v, err := fenceCounter(ctx, c, fenceKey)
			if err != nil {
				errs[i] = err
				tell(i, "read the fencing counter", err)
				continue
			}
			answered++
			highest = max(highest, v)
		}
		if answered < majority(n) {
			return nil, tooFew("read fence key "+fenceKey, errs)
		}
		report.FenceKey, report.FenceCounter = fenceKey, &highest
	}
	return report, nil
}

// holder describes who holds key on the quorum, for the message of a lock
// not obtained: ` by "META" on 3 of 3 masters (expires in 9.8s)`, or
// ` on 2 of 3 masters` when no majority holds it with one token, or ""
// when too few masters answer.
func (q *quorumConn) holder(ctx context.Context, key string) string {
	infos, errs := q.inspectAll(ctx, key)
	v := viewOf(key, infos, errs)
	if v.answered < majority(len(q.clients)) {
		return ""
	}
	s := v.status
	text := fmt.Sprintf(" on %d of %d masters", s.Masters.Held, s.Masters.Of)
	if !s.Held || s.Foreign {
		return text
	}
	if s.Metadata != "" {
		text = fmt.Sprintf(" by %q%s", s.Metadata, text)
	}
	if s.TTLms > 0 {
		text += fmt.Sprintf(" (expires in %v)", time.Duration(s.TTLms)*time.Millisecond)
	}
	return text
}

// releaseQuorum is "release" on a quorum: keys are released, by token
// alone, on every master that holds them with token (the release of the
// single-server form, on each). It exits 0 when a majority released them,
// 3 when fewer held them with token (the others are left alone), and
// --redis-error-exit-code when failed masters could have made the
// difference.
func releaseQuorum(ctx context.Context, prog string, conn *connFlags, keys []string, token string, stdout, stderr io.Writer) int {
	q, code, ok := conn.dialQuorum(ctx, prog, stderr, time.Time{}, nil)
	if !ok {
		return code
	}
	defer q.close()
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	n := len(q.clients)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, c := range q.clients {
		wg.Go(func() {
			lock, err := redislock.New(c).Attach(keys, token, 0)
			if err == nil {
				err = lock.Release(ctx)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	released, notHeld := 0, 0
	var failures []string
	for i, err := range errs {
		switch {
		case err == nil:
			released++
		case errors.Is(err, redislock.ErrLockNotHeld):
			notHeld++
		case errors.Is(err, redislock.ErrInvalidKey), errors.Is(err, redislock.ErrInvalidToken):
			_, _ = fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return exitUsage
		default:
			failures = append(failures, fmt.Sprintf("--redis #%d, %s: %v", i+1, q.endpoints[i], err))
		}
	}
	what := strings.Join(keys, " ")
	switch {
	case released >= majority(n):
		for _, k := range keys {
			_, _ = fmt.Fprintf(stdout, "released %s (on %d of %d masters)\n", k, released, n)
		}
		for _, f := range failures {
			_, _ = fmt.Fprintf(stderr, "%s: %s (its keys expire by themselves)\n", prog, f)
		}
		return exitOK
	case released+len(failures) >= majority(n) && len(failures) > 0:
		_, _ = fmt.Fprintf(stderr, "%s: %s: released on %d of %d masters, too few answered to tell whether it is still held: %s\n", prog, what, released, n, strings.Join(failures, "; "))
		return conn.errorCode
	}
	_, _ = fmt.Fprintf(stderr, "%s: %s: not held with this token on a majority of the masters (released on %d, not held on %d, of %d): left alone where held by another\n", prog, what, released, notHeld, n)
	return exitNotHeld
}

// defaultMaxTTL is --max-ttl's default: the library's
// (redislock.QuorumOptions.MaxTTL).
const defaultMaxTTL = time.Minute

// checkQuorumRun returns what is wrong with "run"'s flags for a quorum,
// or "": a quorum holds plain locks only, and --max-ttl is its own.
func checkQuorumRun(o *runOptions) string {
	if !o.conn.quorum() {
		if o.maxTTLSet {
			return "--max-ttl is the MaxTTL of a quorum: give --redis once per master (3, 5 or more)"
		}
		return ""
	}
	const only = "a quorum (several --redis) holds plain locks only"
	switch {
	case o.limit > 0:
		return "--limit cannot be used with a quorum: " + only
	case o.shared:
		return "--shared cannot be used with a quorum: " + only
	case *o.minHold > 0:
		return "--min-hold cannot be used with a quorum: " + only
	case *o.oncePer > 0:
		return "--once-per cannot be used with a quorum: " + only
	case *o.maxTTL < minRunTTL:
		return fmt.Sprintf("--max-ttl %v is below %v", *o.maxTTL, minRunTTL)
	case *o.ttl > *o.maxTTL:
		return fmt.Sprintf("--ttl %v is above --max-ttl %v: raise --max-ttl on every run that uses these masters", *o.ttl, *o.maxTTL)
	}
	return ""
}
