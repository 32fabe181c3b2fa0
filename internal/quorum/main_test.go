package quorum

import (
	"os"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }
