// Package compat_test holds the tests that compare this library with
// github.com/bsm/redislock v0.10.0 (the drop-in table, interoperability
// during a rolling migration, Inspect of its keys): a module of its own,
// so that the library's go.mod requires go-redis and nothing else.
package compat_test

import (
	"os"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// replyError is a Redis error reply, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}
