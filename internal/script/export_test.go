package script

import "github.com/redis/go-redis/v9"

// Direct reports whether Run builds the command for c and args itself.
func Direct(c redis.Scripter, args ...any) bool { return direct(c, args) != nil }
