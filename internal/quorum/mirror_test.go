package quorum

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Go mirrors of the scripts in lua/, line for line, over a small key-value
// store. The model checker (model_test.go) runs them as its nodes;
// TestMirrorMatchesScripts runs random calls through both a mirror and the
// real script on a real server and compares replies and keys.

// store is what the scripts use of a server: string keys with an
// optional expiry, TIME and two INFO fields.
type store interface {
	get(key string) (string, bool)
	// set writes key. px > 0: expire in px ms; keepTTL: keep the key's
	// expiry (KEEPTTL); 0: no expiry.
	set(key, value string, px int64)
	pexpire(key string, ms int64) // on an existing key
	del(key string) int64
	pttl(key string) int64 // -2 missing, -1 no expiry
	timeMicros() int64     // TIME as µs
	info() (aof bool, uptimeSeconds int64)
}

const keepTTL = -1

// argv renders script arguments as the server receives them.
func argv(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = v
		case int64:
			out[i] = strconv.FormatInt(v, 10)
		default:
			out[i] = fmt.Sprint(a)
		}
	}
	return out
}

// num is Lua's tonumber for the integers the scripts are given.
func num(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(fmt.Sprintf("mirror: %q is not an integer", s))
	}
	return n
}

// lib.lua

func owner(token string) string { return strconv.Itoa(len(token)) + ":" + token + ":" }

func owns(v string, ok bool, prefix string) bool { return ok && strings.HasPrefix(v, prefix) }

// node.lua

// mine is node.lua's: the fence field after prefix, "<digits>/<hex>",
// ends in "/" + tag.
func mine(v string, ok bool, prefix, tag string) bool {
	if !owns(v, ok, prefix) {
		return false
	}
	rest := v[len(prefix):]
	at := strings.IndexByte(rest, ':')
	if at < 0 {
		return false
	}
	field := rest[:at]
	digits, hexa, found := strings.Cut(field, "/")
	if !found || digits == "" || strings.Trim(digits, "0123456789") != "" || hexa == "" || strings.Trim(hexa, "0123456789abcdefABCDEF") != "" {
		return false
	}
	return strings.HasSuffix(field, "/"+tag)
}

func mirrorRecovering(s store, marker string, window, life int64) bool {
	v, ok := s.get(marker)
	if ok && v == "0" {
		return false
	}
	t := s.timeMicros()
	now := t/1_000_000*1000 + t%1_000_000/1000
	if ok {
		ends, err := strconv.ParseInt(v, 10, 64)
		if err == nil && ends > now {
			return true
		}
		s.set(marker, "0", keepTTL)
		return false
	}
	aof, up := s.info()
	ends := now
	if !aof {
		ends = now + window - max(0, up-1)*1000
	}
	if ends <= now {
		s.set(marker, "0", life)
		return false
	}
	s.set(marker, strconv.FormatInt(ends, 10), life+ends-now)
	return true
}

// errNotInteger is the counter error of node.lua.
func errNotInteger(key string) error {
	return errors.New("ERR redislock: fence key " + key + " does not hold an integer")
}

func mirrorCounter(s store, key string) (int64, error) {
	v, ok := s.get(key)
	if !ok {
		now := s.timeMicros()
		s.set(key, strconv.FormatInt(now, 10), 0)
		return now, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if strings.Trim(v, "0123456789") != "" || v == "" || err != nil || n >= maxToken {
		return 0, errNotInteger(key)
	}
	return n, nil
}

// obtain.lua

func mirrorObtain(s store, keys, argv []string) (int64, error) {
	token, meta, ttl, tag, p := argv[0], argv[1], argv[2], argv[3], argv[4]
	prefix := owner(token)
	fenced := p != "0"
	n := len(keys) - 1
	if fenced {
		n--
	}
	for i := range n {
		if v, ok := s.get(keys[i]); ok && !mine(v, ok, prefix, tag) {
			return 1, nil
		}
	}
	if mirrorRecovering(s, keys[len(keys)-1], num(argv[5]), num(argv[6])) {
		return 2, nil
	}
	value := prefix + p + "/" + tag + ":" + meta
	if !fenced {
		for i := range n {
			s.set(keys[i], value, num(ttl))
		}
		return 0, nil
	}
	c, err := mirrorCounter(s, keys[n])
	if err != nil {
		return 0, err
	}
	for i := range n {
		s.set(keys[i], value, num(ttl))
	}
	if num(p) > c {
		s.set(keys[n], p, keepTTL)
		return num(p), nil
	}
	return -c, nil
}

// confirm.lua

func mirrorConfirm(s store, keys, argv []string) (int64, error) {
	prefix, tag := owner(argv[0]), argv[1]
	n := len(keys) - 1
	values := make([]string, n)
	for i := range n {
		v, ok := s.get(keys[i])
		if !mine(v, ok, prefix, tag) {
			return 0, nil
		}
		values[i] = v
	}
	c, err := mirrorCounter(s, keys[n])
	if err != nil {
		return 0, err
	}
	q := num(argv[2])
	if q <= c {
		return -c, nil
	}
	s.set(keys[n], argv[2], keepTTL)
	field := prefix + argv[2] + "/" + tag
	for i := range n {
		rest := values[i][len(prefix):]
		at := strings.IndexByte(rest, ':')
		s.set(keys[i], field+rest[at:], keepTTL)
	}
	return q, nil
}

// refresh.lua

func mirrorRefresh(s store, keys, argv []string) (int64, error) {
	prefix, tag, ttl := owner(argv[0]), argv[1], num(argv[2])
	n := len(keys) - 1
	gone := make([]bool, n)
	missing := false
	for i := range n {
		v, ok := s.get(keys[i])
		switch {
		case !ok:
			gone[i] = true
			missing = true
		case !mine(v, ok, prefix, tag):
			return -1, nil
		}
	}
	if missing && (argv[3] == "" || mirrorRecovering(s, keys[n], num(argv[4]), num(argv[5]))) {
		return 0, nil
	}
	for i := range n {
		if gone[i] {
			s.set(keys[i], prefix+argv[3], ttl)
		} else {
			s.pexpire(keys[i], ttl)
		}
	}
	return 1, nil
}

// release.lua

func mirrorRelease(s store, keys, argv []string) (int64, error) {
	prefix, tag := owner(argv[0]), argv[1]
	var deleted int64
	for _, k := range keys {
		if v, ok := s.get(k); mine(v, ok, prefix, tag) {
			deleted += s.del(k)
		}
	}
	return deleted, nil
}

// ttl.lua

func mirrorTTL(s store, keys, argv []string) (int64, error) {
	prefix, tag := owner(argv[0]), argv[1]
	var least int64
	for _, k := range keys {
		if v, ok := s.get(k); !mine(v, ok, prefix, tag) {
			return 0, nil
		}
		ms := s.pttl(k)
		if ms == 0 {
			return 0, nil
		}
		if ms > 0 && (least == 0 || ms < least) {
			least = ms
		}
	}
	return least, nil
}

// mapStore is a store over a map, for the differential test: its clock
// and INFO are set by the test.
type mapStore struct {
	keys   map[string]mapEntry
	nowMs  int64 // for expiry
	micros int64 // TIME
	aof    bool
	uptime int64
}

type mapEntry struct {
	value string
	exp   int64 // ms; 0 for none
}

func newMapStore() *mapStore { return &mapStore{keys: map[string]mapEntry{}} }

func (m *mapStore) get(key string) (string, bool) {
	e, ok := m.keys[key]
	if ok && e.exp != 0 && e.exp <= m.nowMs {
		delete(m.keys, key)
		return "", false
	}
	return e.value, ok
}

func (m *mapStore) set(key, value string, px int64) {
	e := mapEntry{value: value}
	switch {
	case px > 0:
		e.exp = m.nowMs + px
	case px == keepTTL:
		if old, ok := m.keys[key]; ok {
			e.exp = old.exp
		}
	}
	m.keys[key] = e
}

func (m *mapStore) pexpire(key string, ms int64) {
	if e, ok := m.keys[key]; ok {
		e.exp = m.nowMs + ms
		m.keys[key] = e
	}
}

func (m *mapStore) del(key string) int64 {
	if _, ok := m.get(key); !ok {
		return 0
	}
	delete(m.keys, key)
	return 1
}

func (m *mapStore) pttl(key string) int64 {
	e, ok := m.keys[key]
	switch {
	case !ok:
		return -2
	case e.exp == 0:
		return -1
	}
	return e.exp - m.nowMs
}

func (m *mapStore) timeMicros() int64   { return m.micros }
func (m *mapStore) info() (bool, int64) { return m.aof, m.uptime }
