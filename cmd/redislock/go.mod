module github.com/redislock/redislock/cmd/redislock

go 1.26.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/creack/pty v1.1.24
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redislock/redislock v0.1.0
	golang.org/x/mod v0.42.0
	golang.org/x/sys v0.48.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)
