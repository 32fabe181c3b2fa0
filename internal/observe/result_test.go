package observe

import (
	"errors"
	"testing"
)

func TestResultOf(t *testing.T) {
	err := errors.New("x")
	for _, c := range []struct {
		obtained bool
		err      error
		want     Result
	}{
		{true, nil, Obtained},
		{false, nil, NotObtained},
		{false, err, Failed},
		{true, err, Failed},
	} {
		if got := ResultOf(c.obtained, c.err); got != c.want {
			t.Errorf("ResultOf(%v, %v) = %d, want %d", c.obtained, c.err, got, c.want)
		}
	}
}
