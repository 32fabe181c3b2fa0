package redislockmigrate_test

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockmigrate"
	"github.com/redislock/redislock/internal/redistest"
)

// waitTimeout bounds every wait for something the test caused.
const waitTimeout = 20 * time.Second

// migrations: version 1 creates the table that the others write to (run
// twice, it would fail).
var migrations = fstest.MapFS{
	"1_runs.up.sql":  {Data: []byte("CREATE TABLE runs (version INTEGER NOT NULL);")},
	"2_two.up.sql":   {Data: []byte("INSERT INTO runs (version) VALUES (2);")},
	"3_three.up.sql": {Data: []byte("INSERT INTO runs (version) VALUES (3);")},
}

// counting is the SQLite driver of one replica, counting the migrations it
// runs; before the first, it calls first.
type counting struct {
	database.Driver
	runs  atomic.Int32
	first func()
}

func (c *counting) Run(r io.Reader) error {
	if c.runs.Add(1) == 1 && c.first != nil {
		c.first()
	}
	return c.Driver.Run(r)
}

// observed is the driver migrate gets: it records the Lock and Unlock
// calls of a replica's Driver.
type observed struct {
	*redislockmigrate.Driver
	replica string
	ev      *events
}

func (o observed) Lock() error {
	o.ev.calls <- o.replica
	err := o.Driver.Lock()
	o.ev.add(o.replica + " locked")
	return err
}

func (o observed) Unlock() error {
	// Recorded before: the release wakes the waiter, which may record
	// its Lock before this Unlock returns.
	o.ev.add(o.replica + " unlock")
	return o.Driver.Unlock()
}

// events records, in order, what the replicas' drivers were asked and did.
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

// sqliteDriver opens file with the migrate SQLite driver, in a connection
// of its own.
func sqliteDriver(t *testing.T, file string) database.Driver {
	t.Helper()
	d, err := sqlite.WithInstance(openDB(t, file), &sqlite.Config{})
	if err != nil {
		t.Fatalf("sqlite.WithInstance: %v", err)
	}
	return d
}

func newMigrate(t *testing.T, db database.Driver) *migrate.Migrate {
	t.Helper()
	src, err := iofs.New(migrations, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", db)
	if err != nil {
		t.Fatalf("NewWithInstance: %v", err)
	}
	return m
}

func wrap(t *testing.T, inner database.Driver, c *redislock.Client, key string, opt *redislockmigrate.Options) *redislockmigrate.Driver {
	t.Helper()
	d, err := redislockmigrate.Wrap(inner, c, key, opt)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	return d
}

// Two migrate instances (two replicas, each with its own connection to
// the database and its own redislock Client) migrate the same SQLite
// database at once: one runs the three migrations, the other waits in
// Lock while they run, then finds them applied (ErrNoChange).
func TestTwoInstancesMigrateOnce(t *testing.T) {
	rdb := redistest.Standalone(t)
	file := filepath.Join(t.TempDir(), "app.db")
	key := redistest.Key(t, "migrations")
	ev := &events{calls: make(chan string, 2)}
	// The first migration goes on only once both replicas have asked for
	// the lock, so that the second is waiting while the first migrates.
	bothAsked := func() {
		for range 2 {
			select {
			case <-ev.calls:
			case <-time.After(waitTimeout):
				t.Error("the other replica never asked for the lock")
				return
			}
		}
	}
	drivers := map[string]*counting{}
	ms := map[string]*migrate.Migrate{}
	for _, name := range []string{"A", "B"} {
		drivers[name] = &counting{Driver: sqliteDriver(t, file), first: bothAsked}
		d := wrap(t, drivers[name], redislock.New(rdb), key, nil)
		ms[name] = newMigrate(t, observed{Driver: d, replica: name, ev: ev})
	}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, m := range ms {
		wg.Go(func() {
			err := m.Up()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()

	first, second := "A", "B"
	if drivers["B"].runs.Load() > 0 {
		first, second = "B", "A"
	}
	if errs[first] != nil || !errors.Is(errs[second], migrate.ErrNoChange) {
		t.Errorf("Up: %s: %v, %s: %v; want nil and ErrNoChange", first, errs[first], second, errs[second])
	}
	if a, b := drivers[first].runs.Load(), drivers[second].runs.Load(); a != 3 || b != 0 {
		t.Errorf("migrations run: %s %d, %s %d; want 3 and 0", first, a, second, b)
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
	for name, m := range ms {
		if v, dirty, err := m.Version(); err != nil || v != 3 || dirty {
			t.Errorf("%s: Version = %d, %v, %v; want 3, clean", name, v, dirty, err)
		}
	}
	if n := rdb.Exists(t.Context(), key).Val(); n != 0 {
		t.Errorf("the lock %s is still held after both migrated", key)
	}
}

// The lock lost while a migration runs (its key deleted): OnLost is told,
// the migration finishes (a driver's Run has no context), and the next
// step, its SetVersion, fails with an error matching ErrLockLost: Up
// returns it, the version left dirty, the next migrations not run.
func TestLockLost(t *testing.T) {
	rdb := redistest.Standalone(t)
	key := redistest.Key(t, "migrations")
	lost := make(chan error, 1)
	inner := &counting{Driver: sqliteDriver(t, filepath.Join(t.TempDir(), "app.db"))}
	inner.first = func() {
		if err := rdb.Del(t.Context(), key).Err(); err != nil {
			t.Error(err)
			return
		}
		select { // the migration runs until the loss is seen
		case err := <-lost:
			lost <- err
		case <-time.After(waitTimeout):
			t.Error("OnLost was not called")
		}
	}
	// A short TTL: the keep-alive refreshes every 100 ms, and finds the
	// key gone at the first refresh after the delete.
	d := wrap(t, inner, redislock.New(rdb), key, &redislockmigrate.Options{
		TTL:    300 * time.Millisecond,
		OnLost: func(err error) { lost <- err },
	})
	m := newMigrate(t, d)
	err := m.Up()
	if !errors.Is(err, redislock.ErrLockLost) {
		t.Errorf("Up = %v, want an error matching ErrLockLost", err)
	}
	if err := <-lost; !errors.Is(err, redislock.ErrLockLost) {
		t.Errorf("OnLost got %v, want an error matching ErrLockLost", err)
	}
	if n := inner.runs.Load(); n != 1 {
		t.Errorf("%d migrations run, want 1: none after the loss", n)
	}
	if v, dirty, err := inner.Version(); err != nil || v != 1 || !dirty {
		t.Errorf("Version = %d, %v, %v; want 1, dirty", v, dirty, err)
	}
}

// A lock held by another for longer than Wait: Lock gives up with an error
// matching database.ErrLocked and ErrNotObtained, and Up runs nothing.
func TestLockWait(t *testing.T) {
	rdb := redistest.Standalone(t)
	c := redislock.New(rdb)
	key := redistest.Key(t, "migrations")
	other, err := c.Obtain(t.Context(), key, time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	defer other.Release(t.Context())
	inner := &counting{Driver: sqliteDriver(t, filepath.Join(t.TempDir(), "app.db"))}
	m := newMigrate(t, wrap(t, inner, c, key, &redislockmigrate.Options{Wait: 200 * time.Millisecond}))
	if err := m.Up(); !errors.Is(err, database.ErrLocked) || !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Up = %v, want ErrLocked and ErrNotObtained", err)
	}
	if n := inner.runs.Load(); n != 0 {
		t.Errorf("%d migrations run while another held the lock", n)
	}
}

// Lock and Unlock out of turn, Close with the lock held, and bad options.
func TestDriverMisuse(t *testing.T) {
	rdb := redistest.Standalone(t)
	c := redislock.New(rdb)
	key := redistest.Key(t, "migrations")
	inner := sqliteDriver(t, filepath.Join(t.TempDir(), "app.db"))
	d := wrap(t, inner, c, key, nil)
	if err := d.Unlock(); !errors.Is(err, database.ErrNotLocked) {
		t.Errorf("Unlock before Lock = %v, want ErrNotLocked", err)
	}
	if err := d.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if err := d.Lock(); !errors.Is(err, database.ErrLocked) {
		t.Errorf("second Lock = %v, want ErrLocked", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n := rdb.Exists(t.Context(), key).Val(); n != 0 {
		t.Error("the key is held after Close")
	}

	for _, tc := range []struct {
		name   string
		inner  database.Driver
		client *redislock.Client
		key    string
		opt    *redislockmigrate.Options
		want   error
	}{
		{"nil driver", nil, c, "k", nil, redislock.ErrInvalidOption},
		{"nil client", inner, nil, "k", nil, redislock.ErrNilClient},
		{"empty key", inner, c, "", nil, redislock.ErrInvalidKey},
		{"TTL below 1ms", inner, c, "k", &redislockmigrate.Options{TTL: time.Microsecond}, redislock.ErrInvalidTTL},
		{"negative Wait", inner, c, "k", &redislockmigrate.Options{Wait: -time.Second}, redislock.ErrInvalidOption},
	} {
		if d, err := redislockmigrate.Wrap(tc.inner, tc.client, tc.key, tc.opt); !errors.Is(err, tc.want) || d != nil {
			t.Errorf("%s: Wrap = %v, %v; want nil, %v", tc.name, d, err, tc.want)
		}
	}
}
