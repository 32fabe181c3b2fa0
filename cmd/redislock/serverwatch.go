package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// The watch of a run's server: a restart of Redis without persistence
// empties it, and the lock with it, and the keep-alive would find that
// only at its next refresh, up to TTL/3 later, while another run may have
// taken the key meanwhile. The watch holds a connection of its own to the
// server that holds KEY, blocked in a BLPOP that nothing ever answers: the
// kernel closes it the moment the server dies, the watch then tries every
// reconnectPace to reach the server again and, as soon as it answers,
// checks that the lock is still held with the run's token.
// A run_id that changed says the server restarted. See docs/cli.md,
// "Redis restarted".
const (
	// watchBlock is each BLPOP of the watch: a new one follows at once.
	watchBlock = 5 * time.Second
	// watchPing paces the watch where it cannot block (a user whose ACL
	// refuses BLPOP, a KEY of which no blocking key shares the Cluster
	// slot): a PING each time.
	watchPing = 100 * time.Millisecond
	// reconnectPace separates the attempts to reach the server again in
	// the first reconnectFast of an outage; reconnectSlow after that.
	reconnectPace = 10 * time.Millisecond
	reconnectFast = 10 * time.Second
	reconnectSlow = 100 * time.Millisecond
	// restartHoldBack is how long a run that obtained the lock from a
	// server up for less than restartRecent holds the lock before it starts
	// its command: the time a run from before a restart is given to reach
	// the server again and find its lock gone. INFO gives the uptime in
	// whole seconds, cut down: "1" may mean a moment, "2" at least a second.
	restartHoldBack = time.Second
	restartRecent   = 2 * time.Second
)

// watchNote is what the watch tells "run" after an outage: the connection
// broke, the server answered again, and the lock was checked.
type watchNote struct {
	broke     error // what broke the watch's connection
	restarted bool  // the server that answered has another run_id
	// checked is the check's result: nil when the lock is still held, an
	// error matching [redislock.ErrNotObtained] when it is gone or taken,
	// another error when it could not be checked.
	checked error
}

// serverWatch is a running watch of the server of a run, owned by the
// run: [serverWatch.stop] ends it.
type serverWatch struct {
	endpoint *endpoint
	cancel   context.CancelFunc
	done     chan struct{}
	// notes carries one note per outage; the watch waits for it to be
	// taken before it watches again.
	notes chan watchNote

	mu sync.Mutex
	// client is the watch's client, replaced by a new one for each attempt
	// to reach the server again: a go-redis client whose dial failed as
	// many times as its pool has connections dials no more for a second.
	// nil once stopped.
	client redis.UniversalClient
}

// startServerWatch starts watching the server that holds key, through a
// client of its own of e, on a goroutine of its own. runID is the
// server's run_id when the lock was obtained ("" if unknown). check runs
// on that goroutine each time the server answers again after the
// connection broke, with the watch's client (just connected: the run's
// own client may still be failing fast on its dial errors); it must return
// an error matching [redislock.ErrNotObtained] when the lock is lost.
func startServerWatch(e *endpoint, key, runID string, check func(ctx context.Context, c redis.UniversalClient) error) *serverWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &serverWatch{endpoint: e, client: e.watchClient(), cancel: cancel, done: make(chan struct{}), notes: make(chan watchNote)}
	go w.run(ctx, key, e.cluster != nil, runID, check)
	return w
}

// stop ends the watch and waits for its goroutine to exit. A nil watch,
// or one stopped already, does nothing.
func (w *serverWatch) stop() {
	if w == nil {
		return
	}
	w.cancel()
	w.mu.Lock()
	if w.client != nil {
		_ = w.client.Close() // ends a BLPOP in flight; nothing else to do if it fails
		w.client = nil
	}
	w.mu.Unlock()
	<-w.done
}

// current returns the watch's client, or nil once stopped.
func (w *serverWatch) current() redis.UniversalClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.client
}

// renew replaces the watch's client with a new one and returns it, or nil
// once stopped.
func (w *serverWatch) renew() redis.UniversalClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.client == nil {
		return nil
	}
	_ = w.client.Close() // its connection broke already
	w.client = w.endpoint.watchClient()
	return w.client
}

// run is the watch's goroutine.
func (w *serverWatch) run(ctx context.Context, key string, cluster bool, runID string, check func(ctx context.Context, c redis.UniversalClient) error) {
	defer close(w.done)
	block := blockKey(key, cluster)
	for {
		c := w.current()
		if c == nil {
			return
		}
		node, err := nodeFor(ctx, c, key)
		if err == nil {
			err = w.wait(ctx, node, &block)
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			continue
		}
		n := watchNote{broke: err}
		for {
			c, id, ok := w.reconnect(ctx, key)
			if !ok {
				return
			}
			if runID != "" && id != "" && id != runID {
				n.restarted = true
			}
			if id != "" {
				runID = id
			}
			cctx, cancel := context.WithTimeout(ctx, redisTimeout)
			n.checked = check(cctx, c)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if n.checked == nil || errors.Is(n.checked, redislock.ErrNotObtained) || !retryable(n.checked) {
				break
			}
			// The server answered, but the check failed on something
			// that may pass (LOADING, a connection lost again): again.
		}
		select {
		case w.notes <- n:
		case <-ctx.Done():
			return
		}
	}
}

// wait blocks on the server: a BLPOP of block that nothing answers, or,
// when block is "" or the server refuses it (which empties block), a
// PING after watchPing. It returns nil when the wait ended normally, and
// the error when the connection broke or the server failed in a way that
// may pass (LOADING).
func (w *serverWatch) wait(ctx context.Context, node redis.Cmdable, block *string) error {
	if *block != "" {
		err := node.BLPop(ctx, watchBlock, *block).Err()
		var reply redis.Error
		switch {
		case err == nil, errors.Is(err, redis.Nil):
			return nil
		case !errors.As(err, &reply) || retryable(err):
			return err
		}
		*block = "" // refused for good (NOPERM, MOVED): ping instead
	}
	t := time.NewTimer(watchPing)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
	err := node.Ping(ctx).Err()
	var reply redis.Error
	if errors.As(err, &reply) && !retryable(err) {
		return nil // it answers; a PING refused says nothing more
	}
	return err
}

// reconnect tries to reach the server that holds key, every reconnectPace
// (reconnectSlow after the first reconnectFast), each time with a new
// client, until it answers, and returns that client and the server's
// run_id ("" when INFO is refused), or ok false when ctx ended first.
func (w *serverWatch) reconnect(ctx context.Context, key string) (_ redis.UniversalClient, runID string, ok bool) {
	began := time.Now()
	for {
		pace := reconnectPace
		if time.Since(began) > reconnectFast {
			pace = reconnectSlow
		}
		t := time.NewTimer(pace)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, "", false
		}
		c := w.renew()
		if c == nil {
			return nil, "", false
		}
		node, err := nodeFor(ctx, c, key)
		if err != nil {
			continue
		}
		actx, cancel := context.WithTimeout(ctx, dialTimeout+pingSlack)
		id, err := runIDOf(actx, node)
		cancel()
		var reply redis.Error
		switch {
		case err == nil:
			return c, id, true
		case errors.As(err, &reply) && !retryable(err):
			return c, "", true // INFO refused (an ACL): it answers all the same
		}
	}
}

// blockKey returns the key the watch blocks on for a lock on key: one
// that nothing writes, in key's hash slot on a Cluster (where the watch
// talks to the node of that slot only), or "" when none is found.
func blockKey(key string, cluster bool) string {
	for _, k := range []string{key + ":redislock:watch", "{" + key + "}:redislock:watch"} {
		if !cluster || redislock.HashSlot(k) == redislock.HashSlot(key) {
			return k
		}
	}
	return ""
}

// nodeFor returns the client of the server that holds key: on a Cluster,
// the master of key's slot; otherwise c itself (a standalone server, or
// the master that Sentinel names).
func nodeFor(ctx context.Context, c redis.UniversalClient, key string) (redis.Cmdable, error) {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, key)
	}
	return c, nil
}

// runIDOf returns the run_id of INFO server: it changes each time the
// server starts.
func runIDOf(ctx context.Context, node redis.Cmdable) (string, error) {
	info, err := node.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	return infoField(info, "run_id"), nil
}

// serverStart returns the run_id of the server that holds key and how
// long it has been up (INFO server's uptime_in_seconds), within
// redisTimeout: "" and -1 when they cannot be read (INFO refused by an
// ACL, or not there: no restart can be told then, nothing else changes).
func serverStart(ctx context.Context, rdb redis.UniversalClient, key string) (runID string, uptime time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	node, err := nodeFor(ctx, rdb, key)
	if err != nil {
		return "", -1
	}
	info, err := node.Info(ctx, "server").Result()
	if err != nil {
		return "", -1
	}
	runID, uptime = infoField(info, "run_id"), -1
	if s, err := strconv.ParseInt(infoField(info, "uptime_in_seconds"), 10, 64); err == nil {
		uptime = time.Duration(s) * time.Second
	}
	return runID, uptime
}

// infoField returns the value of field in the text of INFO, or "".
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}
