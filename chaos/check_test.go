package chaos

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// obtained is a successful obtain of acquisition acq by client, called at
// start and returning at end, valid for ttl from start.
func obtained(client, acq int, start, end, ttl time.Duration, token int64) Event {
	return Event{Op: OpObtain, Client: client, Acq: acq, Key: "k", Start: start, End: end, Result: OK, TTL: ttl, Token: token}
}

func refreshed(client, acq int, start, end, ttl time.Duration, res Result) Event {
	return Event{Op: OpRefresh, Client: client, Acq: acq, Key: "k", Start: start, End: end, Result: res, TTL: ttl}
}

func released(client, acq int, start, end time.Duration) Event {
	return Event{Op: OpRelease, Client: client, Acq: acq, Key: "k", Start: start, End: end, Result: OK}
}

func wrote(client, acq int, at time.Duration, token, seq int64, res Result) Event {
	return Event{Op: OpWrite, Client: client, Acq: acq, Key: "k", Start: at, End: at, Result: res, Token: token, Seq: seq}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name   string
		events []Event
		want   Report // counts only
	}{
		{
			name: "clean hand-over by release",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 100*ms, 10),
				wrote(1, 1, 5*ms, 10, 1, OK),
				released(1, 1, 20*ms, 21*ms),
				{Op: OpObtain, Client: 2, Key: "k", Start: 2 * ms, End: 3 * ms, Result: No},
				obtained(2, 2, 22*ms, 23*ms, 100*ms, 11),
				wrote(2, 2, 24*ms, 11, 2, OK),
				released(2, 2, 30*ms, 31*ms),
			},
			want: Report{Ops: 7, Obtains: 2},
		},
		{
			name: "clean hand-over by expiry",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				obtained(2, 2, 10*ms, 12*ms, 10*ms, 11),
			},
			want: Report{Ops: 2, Obtains: 2},
		},
		{
			name: "obtained while held",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 100*ms, 10),
				obtained(2, 2, 50*ms, 51*ms, 100*ms, 11),
			},
			want: Report{Ops: 2, Obtains: 2, Overlaps: 1, ObtainedWhileHeld: 1},
		},
		{
			name: "overlap, obtain called before the other holder knew",
			events: []Event{
				obtained(1, 1, 0, 10*ms, 100*ms, 10),
				obtained(2, 2, 5*ms, 20*ms, 100*ms, 11),
			},
			want: Report{Ops: 2, Obtains: 2, Overlaps: 1},
		},
		{
			name: "release ends the belief at its start",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 100*ms, 10),
				released(1, 1, 20*ms, 30*ms),
				obtained(2, 2, 21*ms, 25*ms, 100*ms, 11),
			},
			want: Report{Ops: 3, Obtains: 2},
		},
		{
			name: "refresh extends the validity",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				refreshed(1, 1, 8*ms, 9*ms, 10*ms, OK),
				obtained(2, 2, 15*ms, 16*ms, 10*ms, 11),
			},
			want: Report{Ops: 3, Obtains: 2, Overlaps: 1, ObtainedWhileHeld: 1},
		},
		{
			name: "failed refresh does not extend it",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				refreshed(1, 1, 8*ms, 9*ms, 10*ms, Failed),
				obtained(2, 2, 15*ms, 16*ms, 10*ms, 11),
			},
			want: Report{Ops: 3, Obtains: 2, Failed: 1},
		},
		{
			name: "refresh finds the lock gone inside the validity",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 100*ms, 10),
				refreshed(1, 1, 8*ms, 9*ms, 100*ms, No),
			},
			want: Report{Ops: 2, Obtains: 1, LostEarly: 1},
		},
		{
			name: "refresh finds the lock gone after the validity",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				refreshed(1, 1, 11*ms, 12*ms, 10*ms, No),
			},
			want: Report{Ops: 2, Obtains: 1},
		},
		{
			name: "release finds the lock gone inside the validity",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 100*ms, 10),
				{Op: OpRelease, Client: 1, Acq: 1, Key: "k", Start: 8 * ms, End: 9 * ms, Result: No},
			},
			want: Report{Ops: 2, Obtains: 1, LostEarly: 1},
		},
		{
			name: "token not above an earlier acquisition's",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				obtained(2, 2, 20*ms, 21*ms, 10*ms, 10),
				obtained(3, 3, 40*ms, 41*ms, 10*ms, 5),
			},
			want: Report{Ops: 3, Obtains: 3, TokenOrder: 2},
		},
		{
			name: "concurrent obtains may take tokens in any order",
			events: []Event{
				obtained(1, 1, 0, 10*ms, 1*ms, 12),
				obtained(2, 2, 5*ms, 15*ms, 1*ms, 11),
			},
			want: Report{Ops: 2, Obtains: 2},
		},
		{
			name: "stale write accepted",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				obtained(2, 2, 20*ms, 21*ms, 10*ms, 11),
				wrote(2, 2, 22*ms, 11, 1, OK),
				wrote(1, 1, 23*ms, 10, 2, OK),
			},
			want: Report{Ops: 4, Obtains: 2, StaleAccepted: 1},
		},
		{
			name: "paused holder refused after its validity",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 10*ms, 10),
				obtained(2, 2, 20*ms, 21*ms, 10*ms, 11),
				wrote(2, 2, 22*ms, 11, 1, OK),
				wrote(1, 1, 23*ms, 10, 2, No),
			},
			want: Report{Ops: 4, Obtains: 2, StaleRefused: 1},
		},
		{
			name: "write refused inside the writer's validity",
			events: []Event{
				obtained(1, 1, 0, 1*ms, 100*ms, 10),
				obtained(2, 2, 2*ms, 3*ms, 100*ms, 11),
				wrote(2, 2, 4*ms, 11, 1, OK),
				wrote(1, 1, 5*ms, 10, 2, No),
			},
			want: Report{Ops: 4, Obtains: 2, Overlaps: 1, ObtainedWhileHeld: 1, StaleRefused: 1, HonestRefused: 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.events)
			got.Violations = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Check:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// A violation shows the events of both acquisitions and the faults around
// them, and nothing else.
func TestCheckMinimalHistory(t *testing.T) {
	events := []Event{
		{Op: OpFault, Start: 0, Note: "partition client 1"},
		obtained(3, 7, 1*ms, 2*ms, 5*ms, 9), // unrelated, before
		obtained(1, 1, 10*ms, 11*ms, 100*ms, 10),
		wrote(1, 1, 12*ms, 10, 1, OK),
		{Op: OpFault, Start: 30 * ms, Note: "heal"},
		obtained(2, 2, 50*ms, 51*ms, 100*ms, 11),
		released(2, 2, 60*ms, 61*ms),
		{Op: OpFault, Start: 500 * ms, Note: "later"},
	}
	r := Check(events)
	if r.Overlaps != 1 || len(r.Violations) != 2 {
		t.Fatalf("got %d overlaps and violations %v, want 1 overlap and 2 violations", r.Overlaps, r.Violations)
	}
	text := r.Violations[0].String()
	for _, want := range []string{"overlap", "#1", "#2", "partition client 1", "heal", "release"} {
		if !strings.Contains(text, want) {
			t.Errorf("violation text lacks %q:\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"#7", "later"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("violation text has %q, which is not part of it:\n%s", unwanted, text)
		}
	}
	if n := len(r.Violations[0].Events); n != 6 {
		t.Errorf("minimal history has %d events, want 6:\n%s", n, text)
	}
}

func TestStore(t *testing.T) {
	h := NewHistory()
	s := NewStore(h)
	steps := []struct {
		key   string
		token int64
		want  bool
	}{
		{"a", 5, true},
		{"a", 5, true}, // the same holder again
		{"a", 4, false},
		{"b", 1, true}, // keys are independent
		{"a", 6, true},
		{"a", 5, false},
	}
	for i, st := range steps {
		if got := s.Write(1, 1, st.key, st.token); got != st.want {
			t.Errorf("step %d: Write(%q, %d) = %v, want %v", i, st.key, st.token, got, st.want)
		}
	}
	r := Check(h.Events())
	if r.StaleAccepted != 0 || r.StaleRefused != 2 {
		t.Errorf("Check of the store's writes: %+v, want 0 stale accepted, 2 refused", r)
	}
}

// Claim hands out the slots of a resource with N holders: a free slot, or
// one whose last writer is not live, and only to a higher token; a holder
// whose slot was taken over is refused.
func TestStoreClaim(t *testing.T) {
	h := NewHistory()
	s := NewStore(h)
	liveOf := func(tokens ...int64) func(int64) bool {
		return func(t int64) bool {
			for _, x := range tokens {
				if x == t {
					return true
				}
			}
			return false
		}
	}
	took := s.Above(SlotKey("k", 0), 5)
	steps := []struct {
		token int64
		live  func(int64) bool
		want  string // "" for none
	}{
		{5, liveOf(5), "k#0"},
		{7, liveOf(5, 7), "k#1"},
		{9, liveOf(5, 7, 9), ""},   // both slots held by live permits
		{9, liveOf(7, 9), "k#0"},   // 5 is gone: its slot is taken over
		{3, liveOf(3), ""},         // a lower token takes no slot, even from the dead
		{11, liveOf(9, 11), "k#1"}, // 7 is gone
		{12, liveOf(12), "k#0"},    // both free: the longest unused (token 9 < 11)
	}
	for i, st := range steps {
		got, ok := s.Claim(1, i+1, "k", 2, st.token, st.live)
		if got != st.want || ok != (st.want != "") {
			t.Errorf("step %d: Claim(token %d) = %q, %v; want %q", i, st.token, got, ok, st.want)
		}
		if i == 2 {
			select {
			case <-took:
				t.Errorf("Above(k#0, 5) closed before a higher token took the slot")
			default:
			}
		}
	}
	select {
	case <-took:
	default:
		t.Errorf("Above(k#0, 5) not closed after token 9 took the slot")
	}
	// The holder of token 5, paused, writes to the slot it had.
	if s.Write(1, 1, "k#0", 5) {
		t.Errorf("the write of token 5 to its slot, taken over, was accepted")
	}
	r := CheckLimit(h.Events(), 2)
	if r.StaleAccepted != 0 || r.StaleRefused != 1 {
		t.Errorf("CheckLimit of the slot writes: %d stale accepted, %d refused; want 0, 1", r.StaleAccepted, r.StaleRefused)
	}
}

func TestFormatTable(t *testing.T) {
	out := FormatTable([]Row{{Kind: "latency", Runs: 2, Report: Report{Ops: 100, Overlaps: 0, StaleRefused: 3}}})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "stale accepted") || !strings.Contains(lines[1], "latency") {
		t.Errorf("table:\n%s", out)
	}
}
