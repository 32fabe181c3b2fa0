package election

import (
	"slices"
	"testing"
	"time"
)

func TestObserverUpdate(t *testing.T) {
	leads := func(term, rev int64, value string) State {
		return State{Leads: true, Term: term, Rev: rev, Value: value, TTL: time.Second}
	}
	none := func(term int64) State { return State{Term: term} }
	read := func(x State) State { x.Current = true; return x }
	elected := func(term int64, v string) Event { return Event{Change: Elected, Term: term, Value: v} }
	proclaimed := func(term int64, v string) Event {
		return Event{Change: Proclaimed, Term: term, Value: v}
	}
	gone := func(term int64) Event { return Event{Change: Ended, Term: term} }
	tests := []struct {
		name string
		seen []State
		want []Event
	}{
		{"first state, no leader", []State{none(0)}, []Event{gone(0)}},
		{"first state, a leader", []State{leads(5, 0, "a")}, []Event{elected(5, "a")}},
		{"announcement of the value read", []State{leads(5, 0, "a"), leads(5, 1, "a")}, []Event{elected(5, "a")}},
		{"proclaim", []State{leads(5, 1, "a"), leads(5, 2, "b")}, []Event{elected(5, "a"), proclaimed(5, "b")}},
		{"stale proclaim after a newer read", []State{leads(5, 3, "c"), leads(5, 2, "b")}, []Event{elected(5, "c")}},
		{"resign, then the next", []State{leads(5, 1, "a"), none(5), leads(7, 1, "b")}, []Event{elected(5, "a"), gone(5), elected(7, "b")}},
		{"next seen before the resign", []State{leads(5, 1, "a"), leads(7, 1, "b"), none(5)}, []Event{elected(5, "a"), gone(5), elected(7, "b")}},
		{"stale leader after its end", []State{leads(5, 1, "a"), none(5), leads(5, 2, "x")}, []Event{elected(5, "a"), gone(5)}},
		{"no leader with a later term", []State{leads(5, 1, "a"), none(9)}, []Event{elected(5, "a"), gone(5)}},
		{"no leader twice", []State{none(5), none(5), none(9)}, []Event{gone(5)}},
		{"older term ignored", []State{leads(7, 1, "b"), leads(5, 9, "a"), none(5)}, []Event{elected(7, "b")}},
		// Issue 32, item 4: a read after the term counter was lost says
		// term 0; the leadership reported has ended all the same.
		{"read of no leader after the counter was lost", []State{leads(7, 1, "b"), read(none(0))}, []Event{elected(7, "b"), gone(7)}},
		{"then a new leader", []State{leads(7, 1, "b"), read(none(0)), read(leads(9, 0, "c"))}, []Event{elected(7, "b"), gone(7), elected(9, "c")}},
		{"a read of a lower term that leads", []State{leads(7, 1, "b"), read(leads(3, 0, "c"))}, []Event{elected(7, "b"), gone(7), elected(3, "c")}},
		{"a read of no leader with no leader reported", []State{none(7), read(none(0))}, []Event{gone(7)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o Observer
			var got []Event
			for _, x := range tt.seen {
				got = o.Update(x, got)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseNotice(t *testing.T) {
	tests := []struct {
		in   string
		want State
		ok   bool
	}{
		{"N:12", State{Term: 12}, true},
		{"L:12:3:950:node:7", State{Leads: true, Term: 12, Rev: 3, TTL: 950 * time.Millisecond, Value: "node:7"}, true},
		{"L:12:3:-1:", State{Leads: true, Term: 12, Rev: 3, TTL: -time.Millisecond}, true},
		{"L:12:x:1:v", State{}, false},
		{"N:", State{}, false},
		{"X:1", State{}, false},
		{"", State{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseNotice(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("ParseNotice(%q): got %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
