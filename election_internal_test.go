package redislock

import (
	"slices"
	"testing"
	"time"
)

func TestObserverUpdate(t *testing.T) {
	leads := func(term, rev int64, value string) leaderState {
		return leaderState{leads: true, term: term, rev: rev, value: value, ttl: time.Second}
	}
	none := func(term int64) leaderState { return leaderState{term: term} }
	elected := func(term int64, v string) LeaderEvent { return LeaderEvent{Kind: LeaderElected, Term: term, Value: v} }
	proclaimed := func(term int64, v string) LeaderEvent {
		return LeaderEvent{Kind: LeaderProclaimed, Term: term, Value: v}
	}
	gone := func(term int64) LeaderEvent { return LeaderEvent{Kind: NoLeader, Term: term} }
	tests := []struct {
		name string
		seen []leaderState
		want []LeaderEvent
	}{
		{"first state, no leader", []leaderState{none(0)}, []LeaderEvent{gone(0)}},
		{"first state, a leader", []leaderState{leads(5, 0, "a")}, []LeaderEvent{elected(5, "a")}},
		{"announcement of the value read", []leaderState{leads(5, 0, "a"), leads(5, 1, "a")}, []LeaderEvent{elected(5, "a")}},
		{"proclaim", []leaderState{leads(5, 1, "a"), leads(5, 2, "b")}, []LeaderEvent{elected(5, "a"), proclaimed(5, "b")}},
		{"stale proclaim after a newer read", []leaderState{leads(5, 3, "c"), leads(5, 2, "b")}, []LeaderEvent{elected(5, "c")}},
		{"resign, then the next", []leaderState{leads(5, 1, "a"), none(5), leads(7, 1, "b")}, []LeaderEvent{elected(5, "a"), gone(5), elected(7, "b")}},
		{"next seen before the resign", []leaderState{leads(5, 1, "a"), leads(7, 1, "b"), none(5)}, []LeaderEvent{elected(5, "a"), gone(5), elected(7, "b")}},
		{"stale leader after its end", []leaderState{leads(5, 1, "a"), none(5), leads(5, 2, "x")}, []LeaderEvent{elected(5, "a"), gone(5)}},
		{"no leader with a later term", []leaderState{leads(5, 1, "a"), none(9)}, []LeaderEvent{elected(5, "a"), gone(5)}},
		{"no leader twice", []leaderState{none(5), none(5), none(9)}, []LeaderEvent{gone(5)}},
		{"older term ignored", []leaderState{leads(7, 1, "b"), leads(5, 9, "a"), none(5)}, []LeaderEvent{elected(7, "b")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o observer
			var got []LeaderEvent
			for _, x := range tt.seen {
				got = o.update(x, got)
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
		want leaderState
		ok   bool
	}{
		{"N:12", leaderState{term: 12}, true},
		{"L:12:3:950:node:7", leaderState{leads: true, term: 12, rev: 3, ttl: 950 * time.Millisecond, value: "node:7"}, true},
		{"L:12:3:-1:", leaderState{leads: true, term: 12, rev: 3, ttl: -time.Millisecond}, true},
		{"L:12:x:1:v", leaderState{}, false},
		{"N:", leaderState{}, false},
		{"X:1", leaderState{}, false},
		{"", leaderState{}, false},
	}
	for _, tt := range tests {
		got, ok := parseNotice(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseNotice(%q): got %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
