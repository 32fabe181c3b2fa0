package observe

import (
	"context"
	"testing"
	"time"
)

type key struct{}

func TestEachRecoversPanics(t *testing.T) {
	var got []int
	Each([]int{1, 2, 3}, func(h int) {
		if h == 2 {
			panic("hook")
		}
		got = append(got, h)
	})
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Fatalf("got %v, want [1 3]", got)
	}
}

func TestStartingKeepsLastContext(t *testing.T) {
	base := context.Background()
	ctx := Starting(base, []string{"set", "nil", "panic"}, func(h string, ctx context.Context) context.Context {
		switch h {
		case "set":
			return context.WithValue(ctx, key{}, h)
		case "panic":
			panic(h)
		}
		return nil
	})
	if got := ctx.Value(key{}); got != "set" {
		t.Fatalf("got %v, want the context of the first hook", got)
	}
}

func TestAttempts(t *testing.T) {
	var a Attempts
	if w := a.Wait(); w != None {
		t.Fatalf("got wait %d, want None", w)
	}
	if got := a.Next(false); got != (Attempt{N: 1}) {
		t.Fatalf("attempt 1: got %+v", got)
	}
	if w := a.Wait(); w != None {
		t.Fatalf("got wait %d after one attempt, want None", w)
	}
	a.Next(false)
	if w := a.Wait(); w != Polled {
		t.Fatalf("got wait %d, want Polled", w)
	}
	a.Block(true)
	if got := a.Next(true); got != (Attempt{N: 3, Blocked: true, HandedOver: true}) {
		t.Fatalf("attempt 3: got %+v", got)
	}
	if a.N() != 3 || !a.HandedOver() || a.Wait() != Events {
		t.Fatalf("got N %d, handed over %v, wait %d; want 3, true, Events", a.N(), a.HandedOver(), a.Wait())
	}
}

func TestHoldEndsOnce(t *testing.T) {
	var h Hold
	now := time.Now()
	if _, ends := h.End(now); ends {
		t.Fatal("a hold never begun ended")
	}
	h.Begin(now)
	if held, ends := h.End(now.Add(time.Second)); !ends || held != time.Second {
		t.Fatalf("got %v, %v; want 1s, true", held, ends)
	}
	if _, ends := h.End(now.Add(2 * time.Second)); ends {
		t.Fatal("a hold ended twice")
	}
}
