package main

import (
	"fmt"
	"time"
)

// lockEvents is told what happens to the lock of a "run", as it happens,
// on the goroutine of "run": --verbose writes each event as a line on
// stderr; a metrics or tracing hook would be another implementation.
type lockEvents interface {
	// obtained: the lock is held, certainly until validUntil (the end of
	// its lease as the keep-alive knows it).
	obtained(lock held, validUntil time.Time)
	// refreshed: a refresh succeeded; the lock is held until validUntil.
	refreshed(key string, validUntil time.Time)
	// retrying: what failed with err, which may pass; it is tried again
	// until until.
	retrying(what string, err error, until time.Time)
	// lost: the lock was lost (err matches [redislock.ErrLockLost]) or
	// found not held by the release.
	lost(key string, err error)
	// released: the lock was released.
	released(key string)
}

// noEvents ignores every event.
type noEvents struct{}

func (noEvents) obtained(held, time.Time)          {}
func (noEvents) refreshed(string, time.Time)       {}
func (noEvents) retrying(string, error, time.Time) {}
func (noEvents) lost(string, error)                {}
func (noEvents) released(string)                   {}

// verboseEvents writes each event as a line, through say. With limit
// above 0 (--limit) the run holds a permit of a semaphore, with shared
// (--shared) a shared hold of an RWMutex, and the lines say so.
type verboseEvents struct {
	say    func(format string, args ...any)
	limit  int
	shared bool
	// since is when the lock was obtained, for the release's line.
	since time.Time
}

// subject names what the run holds: KEY, the permit of KEY or the shared
// hold of KEY.
func (v *verboseEvents) subject(key string) string {
	switch {
	case v.limit > 0:
		return "the permit of " + key
	case v.shared:
		return "the shared hold of " + key
	}
	return key
}

func (v *verboseEvents) obtained(lock held, validUntil time.Time) {
	v.since = time.Now()
	what, detail := lock.Key(), "token "+shortToken(lock.Token())
	if f := lock.FenceToken(); f != 0 {
		detail += fmt.Sprintf(", fence token %d", f)
	}
	switch {
	case v.limit > 0:
		what, detail = "a permit of "+lock.Key(), fmt.Sprintf("limit %d, %s", v.limit, detail)
	case v.shared:
		what = "a shared hold of " + lock.Key()
	}
	v.say("obtained %s (%s); its lease ends in %v", what, detail, roundMs(time.Until(validUntil)))
}

func (v *verboseEvents) refreshed(key string, validUntil time.Time) {
	v.say("refreshed %s; its lease ends in %v", v.subject(key), roundMs(time.Until(validUntil)))
}

func (v *verboseEvents) retrying(what string, err error, until time.Time) {
	v.say("%s: %v; trying again for %v", what, err, roundMs(time.Until(until)))
}

func (v *verboseEvents) lost(key string, err error) {
	v.say("lost %s: %v", v.subject(key), err)
}

func (v *verboseEvents) released(key string) {
	if v.since.IsZero() { // released before its command started
		v.say("released %s", v.subject(key))
		return
	}
	v.say("released %s (held for %v)", v.subject(key), roundMs(time.Since(v.since)))
}

// shortToken is the first 8 characters of a token, as status shows it:
// enough to tell holders apart, not to release the lock.
func shortToken(token string) string {
	if len(token) > 8 {
		return token[:8] + "…"
	}
	return token
}

// roundMs rounds d to the millisecond, for messages.
func roundMs(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
