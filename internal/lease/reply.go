package lease

import (
	"errors"
	"time"
)

// A Cause is how a lease was lost, as hooks are told: its keys found gone
// or taken, its lease run out, MaxHold reached, or a refresh failed.
type Cause uint8

// The causes of a loss.
const (
	CauseGone Cause = iota + 1
	CauseTaken
	CauseExpired
	CauseMaxHold
	CauseError
)

// Cause returns how a keep-alive that ended as e, other than Stopped, lost
// its lease: NotHeld is CauseTaken when Err is [ErrTaken]; Expired and
// SessionLost are CauseExpired; Failed is CauseError.
func (e End) Cause() Cause {
	switch e.Reason {
	case NotHeld:
		if errors.Is(e.Err, ErrTaken) {
			return CauseTaken
		}
		return CauseGone
	case Expired, SessionLost:
		return CauseExpired
	case MaxHoldReached:
		return CauseMaxHold
	}
	return CauseError
}

// Reply returns the error of refresh.lua's reply n, for a refresh callback
// of [Lease.KeepAlive]: nil for 1 (extended), [ErrTaken] for -1 (held by
// another token), [ErrNotHeld] otherwise (gone).
func Reply(n int64) error {
	switch n {
	case 1:
		return nil
	case -1:
		return ErrTaken
	}
	return ErrNotHeld
}

// Refresh records one refresh of l to ttl around send, which sends it and
// returns refresh.lua's reply: Sending before, then Renewed for 1, Lost
// for another reply, nothing for an error. held: the reply was 1.
func (l *Lease) Refresh(ttl time.Duration, send func() (int64, error)) (held bool, err error) {
	sent := time.Now()
	l.Sending(sent, ttl)
	n, err := send()
	switch {
	case err != nil:
		return false, err
	case n != 1:
		l.Lost(sent)
		return false, nil
	}
	l.Renewed(sent, ttl)
	return true, nil
}
