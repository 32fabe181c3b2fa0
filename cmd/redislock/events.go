package main

import (
	"fmt"
	"time"
)

// lockEvents is told what happens to the lock of a "run", as it happens,
// on the goroutine of "run": --verbose writes each event as a line on
// stderr; a metrics or tracing hook would be another implementation.
type lockEvents interface {
	// obtained: the lock is held, certainly until validUntil.
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
// above 0 (--limit) the run holds a permit of a semaphore, and the lines
// say so.
type verboseEvents struct {
	say   func(format string, args ...any)
	limit int
}

// subject names what the run holds: KEY, or the permit of KEY.
func (v *verboseEvents) subject(key string) string {
	if v.limit > 0 {
		return "the permit of " + key
	}
	return key
}

func (v *verboseEvents) obtained(lock held, validUntil time.Time) {
	what, detail := lock.Key(), "token "+shortToken(lock.Token())
	if f := lock.FenceToken(); f != 0 {
		detail += fmt.Sprintf(", fence token %d", f)
	}
	if v.limit > 0 {
		what, detail = "a permit of "+lock.Key(), fmt.Sprintf("limit %d, %s", v.limit, detail)
	}
	v.say("obtained %s (%s); held for %v", what, detail, roundMs(time.Until(validUntil)))
}

func (v *verboseEvents) refreshed(key string, validUntil time.Time) {
	v.say("refreshed %s; held for %v", v.subject(key), roundMs(time.Until(validUntil)))
}

func (v *verboseEvents) retrying(what string, err error, until time.Time) {
	v.say("%s: %v; trying again for %v", what, err, roundMs(time.Until(until)))
}

func (v *verboseEvents) lost(key string, err error) {
	v.say("lost %s: %v", v.subject(key), err)
}

func (v *verboseEvents) released(key string) {
	v.say("released %s", v.subject(key))
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
