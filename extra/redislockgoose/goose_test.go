package redislockgoose_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockgoose"
	"github.com/redislock/redislock/internal/redistest"
)

// waitTimeout bounds every wait for something the test caused.
const waitTimeout = 20 * time.Second

// sqlMigrations: version 1 creates the table that the others write to
// (run twice, it would fail), version 3 writes to it.
var sqlMigrations = fstest.MapFS{
	"00001_runs.sql":  {Data: []byte("-- +goose Up\nCREATE TABLE runs (version INTEGER NOT NULL);\n")},
	"00003_three.sql": {Data: []byte("-- +goose Up\nINSERT INTO runs (version) VALUES (3);\n")},
}

// events records, in order, what the replicas' lockers were asked and did.
type events struct {
	mu    sync.Mutex
	list  []string
	calls chan string // each Lock call, as it starts
}

func (e *events) add(s string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, s)
}

func (e *events) index(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Index(e.list, s)
}

// observed is a lock.Locker that records the calls of a replica's Locker.
type observed struct {
	inner   lock.Locker
	replica string
	ev      *events
}

func (o observed) Lock(ctx context.Context, db *sql.DB) error {
	o.ev.calls <- o.replica
	err := o.inner.Lock(ctx, db)
	o.ev.add(o.replica + " locked")
	return err
}

func (o observed) Unlock(ctx context.Context, db *sql.DB) error {
	// Recorded before: the release wakes the waiter, which may record
	// its Lock before this Unlock returns.
	o.ev.add(o.replica + " unlock")
	return o.inner.Unlock(ctx, db)
}

func newLocker(t *testing.T, c *redislock.Client, key string, opt *redislockgoose.Options) *redislockgoose.Locker {
	t.Helper()
	l, err := redislockgoose.New(c, key, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// Two providers (two replicas, each with its own connection to the
// database and its own redislock Client) migrate the same SQLite database
// at once: one runs the three migrations, the other waits in Lock while
// they run, then finds them applied and runs none.
func TestTwoProvidersMigrateOnce(t *testing.T) {
	rdb := redistest.Standalone(t)
	file := filepath.Join(t.TempDir(), "app.db")
	key := redistest.Key(t, "migrations")
	ev := &events{calls: make(chan string, 2)}
	var mu sync.Mutex
	ranGo := map[string]int{} // replica → runs of the Go migration

	provider := func(replica string) *goose.Provider {
		// Version 2, in Go: it records its run, and lets the migration go
		// on only once both replicas have asked for the lock, so that the
		// second is waiting while the first migrates.
		two := goose.NewGoMigration(2, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
			mu.Lock()
			ranGo[replica]++
			mu.Unlock()
			for range 2 {
				select {
				case <-ev.calls:
				case <-time.After(waitTimeout):
					return errors.New("the other replica never asked for the lock")
				}
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO runs (version) VALUES (2)")
			return err
		}}, nil)
		locker := observed{inner: newLocker(t, redislock.New(rdb), key, nil), replica: replica, ev: ev}
		p, err := goose.NewProvider(goose.DialectSQLite3, openDB(t, file), sqlMigrations,
			goose.WithLocker(locker), goose.WithGoMigrations(two))
		if err != nil {
			t.Fatalf("NewProvider: %v", err)
		}
		return p
	}
	providers := map[string]*goose.Provider{"A": provider("A"), "B": provider("B")}
	applied := map[string]int{}
	var wg sync.WaitGroup
	for name, p := range providers {
		wg.Go(func() {
			res, err := p.Up(context.Background())
			if err != nil {
				t.Errorf("%s: Up: %v", name, err)
			}
			mu.Lock()
			applied[name] = len(res)
			mu.Unlock()
		})
	}
	wg.Wait()

	first, second := "A", "B"
	if applied["B"] > 0 {
		first, second = "B", "A"
	}
	if applied[first] != 3 || applied[second] != 0 {
		t.Errorf("migrations applied: %v, want 3 by one replica, none by the other", applied)
	}
	if ranGo[first] != 1 || ranGo[second] != 0 {
		t.Errorf("runs of the Go migration per replica: %v, want 1 in all", ranGo)
	}
	if u, l := ev.index(first+" unlock"), ev.index(second+" locked"); u < 0 || l < u {
		t.Errorf("events %v: %s obtained the lock before %s released it", ev.list, second, first)
	}
	rows, err := openDB(t, file).Query("SELECT version FROM runs ORDER BY version")
	if err != nil {
		t.Fatalf("SELECT: %v", err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{2, 3}) {
		t.Errorf("rows written by the migrations: %v, want [2 3]", got)
	}
	for name, p := range providers {
		if v, err := p.GetDBVersion(context.Background()); err != nil || v != 3 {
			t.Errorf("%s: GetDBVersion = %d, %v; want 3", name, v, err)
		}
	}
	if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Errorf("the lock %s is still held after both migrated", key)
	}
}

// The lock lost while a migration runs (its key deleted): OnLost cancels
// Up's context with the loss, the migration's transaction is rolled back,
// and Up returns an error matching ErrLockLost.
func TestLockLost(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "migrations")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// A short TTL: the keep-alive refreshes every 100 ms, and finds the
	// key gone at the first refresh after the delete.
	locker := newLocker(t, redislock.New(rdb), key, &redislockgoose.Options{TTL: 300 * time.Millisecond, OnLost: cancel})
	one := goose.NewGoMigration(1, &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "CREATE TABLE t (x INTEGER)"); err != nil {
			return err
		}
		if err := rdb.Del(context.Background(), key).Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(waitTimeout):
			return errors.New("the migration's context was not cancelled")
		}
	}}, nil)
	p, err := goose.NewProvider(goose.DialectSQLite3, openDB(t, filepath.Join(t.TempDir(), "app.db")), nil,
		goose.WithLocker(locker), goose.WithGoMigrations(one))
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	_, err = p.Up(ctx)
	if !errors.Is(err, redislock.ErrLockLost) {
		t.Errorf("Up = %v, want an error matching ErrLockLost", err)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, redislock.ErrLockLost) {
		t.Errorf("Up's context ended with %v, want the loss", cause)
	}
	if v, err := p.GetDBVersion(context.Background()); err != nil || v != 0 {
		t.Errorf("GetDBVersion = %d, %v; want 0: the migration rolled back", v, err)
	}
}

// A lock held by another for longer than Wait: Lock gives up with an
// error matching ErrNotObtained, and Up runs nothing.
func TestLockWait(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	key := redistest.Key(t, "migrations")
	other, err := c.Obtain(ctx, key, time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	defer other.Release(ctx)
	locker := newLocker(t, c, key, &redislockgoose.Options{Wait: 200 * time.Millisecond})
	p, err := goose.NewProvider(goose.DialectSQLite3, openDB(t, filepath.Join(t.TempDir(), "app.db")), sqlMigrations, goose.WithLocker(locker))
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	if res, err := p.Up(ctx); !errors.Is(err, redislock.ErrNotObtained) || len(res) != 0 {
		t.Errorf("Up = %d results, %v; want none and ErrNotObtained", len(res), err)
	}
}

// Lock and Unlock out of turn, and bad options.
func TestLockerMisuse(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	key := redistest.Key(t, "migrations")
	l := newLocker(t, c, key, nil)
	if err := l.Unlock(ctx, nil); !errors.Is(err, redislockgoose.ErrNotLocked) {
		t.Errorf("Unlock before Lock = %v, want ErrNotLocked", err)
	}
	if err := l.Lock(ctx, nil); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := l.Lock(ctx, nil); !errors.Is(err, redislockgoose.ErrLocked) {
		t.Errorf("second Lock = %v, want ErrLocked", err)
	}
	if err := l.Unlock(ctx, nil); err != nil {
		t.Errorf("Unlock: %v", err)
	}
	if err := l.Unlock(ctx, nil); !errors.Is(err, redislockgoose.ErrNotLocked) {
		t.Errorf("second Unlock = %v, want ErrNotLocked", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the key is held after Unlock")
	}

	for _, tc := range []struct {
		name   string
		client *redislock.Client
		key    string
		opt    *redislockgoose.Options
		want   error
	}{
		{"nil client", nil, "k", nil, redislock.ErrNilClient},
		{"empty key", c, "", nil, redislock.ErrInvalidKey},
		{"TTL below 1ms", c, "k", &redislockgoose.Options{TTL: time.Microsecond}, redislock.ErrInvalidTTL},
		{"negative TTL", c, "k", &redislockgoose.Options{TTL: -time.Second}, redislock.ErrInvalidTTL},
		{"negative Wait", c, "k", &redislockgoose.Options{Wait: -time.Second}, redislock.ErrInvalidOption},
	} {
		if l, err := redislockgoose.New(tc.client, tc.key, tc.opt); !errors.Is(err, tc.want) || l != nil {
			t.Errorf("%s: New = %v, %v; want nil, %v", tc.name, l, err, tc.want)
		}
	}
}
