package redistest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// dirPrefix starts the name of every directory the harness creates under
// os.TempDir, followed by the pid of the test binary that created it.
const dirPrefix = "redistest-"

var sweepOnce sync.Once

// newDir creates a directory for one server. The first call in a process
// also removes the directories left behind by test binaries that have exited
// (instances that Run did not stop).
func newDir(label string) (string, error) {
	sweepOnce.Do(sweepStaleDirs)
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-%s-", dirPrefix, os.Getpid(), label))
	if err != nil {
		return "", fmt.Errorf("redistest: create server directory: %w", err)
	}
	return dir, nil
}

// sweepStaleDirs removes the harness's directories whose creating process is
// gone. Errors are ignored: this is housekeeping.
func sweepStaleDirs() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), dirPrefix)
		pidText, _, ok := strings.Cut(rest, "-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(m)
		}
	}
}
