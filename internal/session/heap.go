package session

// slot is an entry's index in one of the loop's heaps; -1 when not in it.
// An int32: a process never holds 2^31 leases, and entries stay small.
type slot struct{ i int32 }

// entryHeap is a min-heap of entries: by dueAt (the due heap), or by
// deadline (the dead heap: the earlier of ValidUntil and MaxHold).
type entryHeap struct {
	due  bool
	list []*Entry
}

func (h *entryHeap) key(e *Entry) int64 {
	if h.due {
		return e.dueAt
	}
	return e.deadline()
}

func (h *entryHeap) slot(e *Entry) *slot {
	if h.due {
		return &e.due
	}
	return &e.dead
}

// deadline is when the loop must look at the entry whatever happens: its
// ValidUntil, or MaxHold if that comes first.
func (e *Entry) deadline() int64 {
	if e.maxHold != 0 && e.maxHold < e.validUntil {
		return e.maxHold
	}
	return e.validUntil
}

func (h *entryHeap) len() int { return len(h.list) }

// top returns the entry with the least key; the heap must not be empty.
func (h *entryHeap) top() *Entry { return h.list[0] }

// fix puts e in the heap, or where its key now says.
func (h *entryHeap) fix(e *Entry) {
	s := h.slot(e)
	if s.i < 0 {
		s.i = int32(len(h.list)) //nolint:gosec // G115: see slot
		h.list = append(h.list, e)
		h.up(int(s.i))
		return
	}
	if !h.down(int(s.i)) {
		h.up(int(s.i))
	}
}

// remove takes e out of the heap, if it is in.
func (h *entryHeap) remove(e *Entry) {
	s := h.slot(e)
	i := int(s.i)
	if i < 0 {
		return
	}
	last := len(h.list) - 1
	if i != last {
		h.swap(i, last)
	}
	h.list[last] = nil
	h.list = h.list[:last]
	s.i = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

// pop takes the entry with the least key out; the heap must not be empty.
func (h *entryHeap) pop() *Entry {
	e := h.list[0]
	h.remove(e)
	return e
}

func (h *entryHeap) swap(i, j int) {
	h.list[i], h.list[j] = h.list[j], h.list[i]
	h.slot(h.list[i]).i = int32(i) //nolint:gosec // G115: see slot
	h.slot(h.list[j]).i = int32(j) //nolint:gosec // G115: see slot
}

func (h *entryHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if h.key(h.list[i]) <= h.key(h.list[j]) {
			return
		}
		h.swap(i, j)
		j = i
	}
}

// down moves the entry at i down as far as it goes, and reports whether
// it moved.
func (h *entryHeap) down(i int) bool {
	start, n := i, len(h.list)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.key(h.list[r]) < h.key(h.list[l]) {
			j = r
		}
		if h.key(h.list[j]) >= h.key(h.list[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > start
}
