package retry

import (
	"context"
	"errors"
	"testing"
)

func TestWords(t *testing.T) {
	notObtained := errors.New("not obtained")
	other := errors.New("other")
	if got := Words(ErrGaveUp, notObtained); got != notObtained {
		t.Errorf("gave up: got %v, want %v", got, notObtained)
	}
	got := Words(&EndedError{context.Canceled}, notObtained)
	if !errors.Is(got, notObtained) || !errors.Is(got, context.Canceled) {
		t.Errorf("ended: got %v, want both %v and %v", got, notObtained, context.Canceled)
	}
	if got := Words(other, notObtained); got != other {
		t.Errorf("other: got %v, want %v", got, other)
	}
}

func TestRunReturnsAttemptResult(t *testing.T) {
	want := errors.New("final")
	calls := 0
	err := Run(context.Background(), 0, None(), func(error) bool { return false },
		func(context.Context) (bool, error) { calls++; return true, want },
		func(error) error { t.Error("ended called for a done attempt"); return nil })
	if err != want || calls != 1 {
		t.Errorf("got %v after %d calls, want %v after 1", err, calls, want)
	}
}
