package chaos_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// errCounter is a go-redis hook that counts the commands and dials that
// failed with something other than a Redis reply: timeouts, resets,
// refused connections. It shows that a fault schedule reached the clients
// (redislock reports a wait that ran out as not obtained, whatever the
// cause).
type errCounter struct{ n atomic.Int64 }

func (c *errCounter) count(err error) {
	var reply redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &reply) {
		c.n.Add(1)
	}
}

func (c *errCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		c.count(err)
		return conn, err
	}
}

func (c *errCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		c.count(err)
		return err
	}
}

func (c *errCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		c.count(err)
		return err
	}
}

// freezer is a go-redis hook that holds back every command of its client
// while frozen: a command waits, before it is sent, until the client is
// thawed (then it goes on) or its context ends (then it fails with the
// context's error, never sent). It models, at the client boundary, a
// process that is stopped: nothing it would send reaches Redis. A
// freezer's zero value is thawed; it is safe for concurrent use.
type freezer struct {
	mu     sync.Mutex
	thawed chan struct{} // closed by thaw; nil while not frozen
}

// freeze holds back the client's commands from now on, until thaw.
func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed == nil {
		f.thawed = make(chan struct{})
	}
}

// thaw lets the commands held back, and those to come, go on.
func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.thawed != nil {
		close(f.thawed)
		f.thawed = nil
	}
}

// wait blocks while the client is frozen, until thawed or ctx ends.
func (f *freezer) wait(ctx context.Context) error {
	f.mu.Lock()
	thawed := f.thawed
	f.mu.Unlock()
	if thawed == nil {
		return nil
	}
	select {
	case <-thawed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *freezer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *freezer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := f.wait(ctx); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

func (f *freezer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := f.wait(ctx); err != nil {
			for _, cmd := range cmds {
				cmd.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// connErrs is a go-redis hook that counts the errors that reads on its
// client's connections returned (EOF, resets, timeouts), attempts of
// go-redis included: the process hooks see a command once, whatever
// go-redis retried inside. A nil *connErrs counts nothing.
type connErrs struct{ n atomic.Int64 }

// count returns the errors counted so far (0 for nil).
func (c *connErrs) count() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

func (c *connErrs) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return conn, err
		}
		ec := &errConn{Conn: conn, errs: c}
		if sys, ok := conn.(syscall.Conn); ok {
			return sysErrConn{errConn: ec, sys: sys}, nil
		}
		return ec, nil
	}
}

func (c *connErrs) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (c *connErrs) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// errConn is a connection whose read errors are counted in errs.
type errConn struct {
	net.Conn
	errs *connErrs
}

// sysErrConn is an errConn that passes on the socket (syscall.Conn) of the
// connection it wraps, so that go-redis still checks idle connections
// before it uses them.
type sysErrConn struct {
	*errConn
	sys syscall.Conn
}

func (c sysErrConn) SyscallConn() (syscall.RawConn, error) { return c.sys.SyscallConn() }

func (c *errConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.errs.n.Add(1)
	}
	return n, err
}
