package lease

import (
	"context"
	"sync"
)

// Signal is how a keeper of a lease says that it has ended: Done, Err and
// the contexts of Context. A [KeepAlive] has one, and so does each lease
// of a session (internal/session). The zero value is a keeper still
// running; its Done channel is made when first asked for, so that a
// keeper nobody watches costs no channel. Its methods are safe for
// concurrent use.
//
// Ending takes three steps, so that the keeper can stop its own work in
// between: [Signal.Begin] (once), [Signal.Cancel] with the error, then
// [Signal.Close].
type Signal struct {
	mu      sync.Mutex
	begun   bool
	closed  bool
	err     error
	done    chan struct{}         // nil until asked for
	derived map[*derived]struct{} // contexts from Context, cancelled at the end
}

// derived is a context returned by [Signal.Context].
type derived struct{ cancel context.CancelCauseFunc }

// Begin starts the end and reports whether this call did: false when it
// had begun already, and the caller must then leave the end to the one
// that began it.
func (s *Signal) Begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.begun {
		return false
	}
	s.begun = true
	return true
}

// Begun reports whether the end has begun.
func (s *Signal) Begun() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.begun
}

// Cancel sets the error that Err returns from now on, for good, and
// cancels the contexts of Context with it as their cause.
func (s *Signal) Cancel(err error) {
	s.mu.Lock()
	s.err = err
	derived := s.derived
	s.derived = nil
	s.mu.Unlock()
	for d := range derived {
		d.cancel(err)
	}
}

// Close closes Done; later calls do nothing.
func (s *Signal) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	if s.done != nil {
		close(s.done)
	}
}

// Closed reports whether Done is closed.
func (s *Signal) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Done returns a channel that is closed when the keeper has ended. It
// does not block.
func (s *Signal) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.closed {
			close(s.done)
		}
	}
	return s.done
}

// Err returns nil until Cancel, then its error.
func (s *Signal) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Context returns a context derived from parent that is also cancelled,
// with Err as its cause, when the keeper ends: by Cancel, or at once when
// Cancel has run already. Call the CancelFunc when done with it.
func (s *Signal) Context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	d := &derived{cancel: cancel}
	s.mu.Lock()
	if err := s.err; err != nil {
		s.mu.Unlock()
		cancel(err)
		return ctx, func() {}
	}
	if s.derived == nil {
		s.derived = make(map[*derived]struct{})
	}
	s.derived[d] = struct{}{}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.derived, d)
		s.mu.Unlock()
		cancel(context.Canceled)
	}
}
