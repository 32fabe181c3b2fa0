package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// memRow is workload 5 for one library.
type memRow struct {
	Library    string
	IsFloor    bool
	IsThisRepo bool
	Locks      int
	Keys       int64 // keys in the database while the locks were held
	// Bytes is the growth of INFO memory's used_memory less the
	// connections' buffers (mem_clients_normal): keys, values, expiries,
	// and whatever else the library makes Redis keep (such as a client
	// tracking table).
	Bytes int64
	// UsedMemory is the growth of used_memory itself.
	UsedMemory int64
	// Clients is the change in connected clients (0 when the warm-up
	// opened every connection the locks then used).
	Clients int64
}

// PerLock returns the bytes of Redis memory per held lock.
func (r memRow) PerLock() float64 { return float64(r.Bytes) / float64(r.Locks) }

// memSuite holds locks locks at once through each library, on distinct
// keys named alike, and reads Redis's used_memory before and while they
// are held. The database is flushed before each library, so that every
// library starts from the same empty keyspace.
type memSuite struct {
	addr     string
	libs     []library
	locks    int
	log      func(format string, args ...any)
	releases []func(context.Context) error // of the locks held
}

// memWorkers is how many goroutines obtain the locks.
const memWorkers = 16

func (s *memSuite) run(ctx context.Context) ([]memRow, error) {
	admin := redis.NewClient(&redis.Options{Addr: s.addr})
	defer admin.Close()
	var rows []memRow
	for i, lib := range s.libs {
		row, err := s.runOne(ctx, admin, lib)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", lib.Name, err)
		}
		row.IsFloor = i == 0
		s.log("  %s: %.1f bytes per lock, %d keys", lib.Name, row.PerLock(), row.Keys)
		rows = append(rows, row)
	}
	if err := admin.FlushAll(ctx).Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

func (s *memSuite) runOne(ctx context.Context, admin *redis.Client, lib library) (memRow, error) {
	c, err := lib.Connect(s.addr, nil)
	if err != nil {
		return memRow{}, err
	}
	defer c.Close()
	key := func(i int) string { return fmt.Sprintf("bench:mem:%06d", i) }
	// Locks first, taken as the measured ones will be, so that the
	// library's scripts are loaded and its connections open before the
	// baseline.
	if err := s.holdAll(ctx, c, s.locks/10, func(i int) string { return fmt.Sprintf("bench:mem:warmup:%06d", i) }, true); err != nil {
		return memRow{}, err
	}
	if err := admin.FlushAll(ctx).Err(); err != nil {
		return memRow{}, err
	}
	before, err := settledMemory(ctx, admin)
	if err != nil {
		return memRow{}, err
	}

	if err := s.holdAll(ctx, c, s.locks, key, false); err != nil {
		return memRow{}, err
	}
	defer s.releaseAll(ctx)
	held, err := settledMemory(ctx, admin)
	if err != nil {
		return memRow{}, err
	}
	keys, err := admin.DBSize(ctx).Result()
	if err != nil {
		return memRow{}, err
	}
	return memRow{
		Library: lib.Name, IsThisRepo: lib.Module == thisModule, Locks: s.locks, Keys: keys,
		Bytes:      (held.used - held.clients) - (before.used - before.clients),
		UsedMemory: held.used - before.used,
		Clients:    held.connected - before.connected,
	}, nil
}

// holdAll obtains n locks, key(0) to key(n-1), with memWorkers goroutines
// on c; they stay held until releaseAll, or are released at once when
// release is set.
func (s *memSuite) holdAll(ctx context.Context, c conn, n int, key func(int) string, release bool) error {
	s.releases = make([]func(context.Context) error, n)
	errs := make([]error, memWorkers)
	var wg sync.WaitGroup
	for w := range memWorkers {
		wg.Go(func() {
			for i := w; i < n; i += memWorkers {
				if s.releases[i], errs[w] = c.Hold(ctx, key(i)); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	if release {
		s.releaseAll(ctx)
	}
	return errors.Join(errs...)
}

// releaseAll releases the locks of the last holdAll.
func (s *memSuite) releaseAll(ctx context.Context) {
	var wg sync.WaitGroup
	for w := range memWorkers {
		wg.Go(func() {
			for i := w; i < len(s.releases); i += memWorkers {
				if s.releases[i] != nil {
					_ = s.releases[i](ctx)
				}
			}
		})
	}
	wg.Wait()
	s.releases = nil
}

// settledMemory returns memoryInfo once two readings 150 ms apart agree
// (at most 3 s): Redis grows its hash tables incrementally, holding the old
// and the new table until its cron (every 100 ms) has moved every entry.
func settledMemory(ctx context.Context, c *redis.Client) (memory, error) {
	prev, err := memoryInfo(ctx, c)
	if err != nil {
		return memory{}, err
	}
	for range 20 {
		time.Sleep(150 * time.Millisecond)
		m, err := memoryInfo(ctx, c)
		if err != nil {
			return memory{}, err
		}
		if m.used-m.clients == prev.used-prev.clients {
			return m, nil
		}
		prev = m
	}
	return prev, nil
}

// memory is what INFO says of Redis's memory and clients.
type memory struct{ used, clients, connected int64 }

// memoryInfo reads used_memory and mem_clients_normal (INFO memory) and
// connected_clients (INFO clients).
func memoryInfo(ctx context.Context, c *redis.Client) (memory, error) {
	info, err := c.Info(ctx, "memory", "clients").Result()
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*int64{"used_memory": &m.used, "mem_clients_normal": &m.clients, "connected_clients": &m.connected}
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if p := fields[k]; ok && p != nil {
			if *p, err = strconv.ParseInt(v, 10, 64); err != nil {
				return memory{}, fmt.Errorf("INFO %s: %w", k, err)
			}
			delete(fields, k)
		}
	}
	if len(fields) > 0 {
		return memory{}, fmt.Errorf("INFO memory, clients: fields missing: %v", fields)
	}
	return m, nil
}
