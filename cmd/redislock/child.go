package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The environment variables that "run" gives its command.
const (
	envKey        = "REDISLOCK_KEY"
	envToken      = "REDISLOCK_TOKEN"
	envFenceToken = "REDISLOCK_FENCE_TOKEN" //nolint:gosec // the name of a variable, not a credential
)

// childEnv returns env without any of the variables above (an outer
// "redislock run" may have set them), followed by those of this lock.
// REDISLOCK_FENCE_TOKEN is set only when the lock is fenced. Unless
// keepCredentials (--keep-credentials), it also leaves out the password
// that redislock may have read from its environment: $REDIS_PASSWORD,
// $REDISCLI_AUTH, and $REDIS_URL when it holds one (see [urlHasPassword]).
func childEnv(env []string, key, token string, fence int64, fenced, keepCredentials bool) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == envKey || name == envToken || name == envFenceToken:
			continue
		case keepCredentials:
		case name == "REDIS_PASSWORD" || name == "REDISCLI_AUTH":
			continue
		case name == "REDIS_URL" && urlHasPassword(value):
			continue
		}
		out = append(out, kv)
	}
	out = append(out, envKey+"="+key, envToken+"="+token)
	if fenced {
		out = append(out, envFenceToken+"="+strconv.FormatInt(fence, 10))
	}
	return out
}

// urlHasPassword reports whether the connection URL raw may carry a
// secret: user information ("user:password@", or a name alone, which
// may be a password where the URL form is unclear) or a password in its
// query (?password=, ?sentinel_password=).
func urlHasPassword(raw string) bool {
	_, userinfo, rest := splitUserinfo(raw)
	if userinfo != "" || !strings.Contains(raw, "://") && strings.Contains(raw, "@") {
		return true
	}
	_, query, _ := strings.Cut(rest, "?")
	for _, kv := range strings.Split(query, "&") {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(name), "password") {
			return true
		}
	}
	return false
}

// lookCommand resolves the command's name as the shell would, before the
// lock is taken. It returns the exit status for a command that cannot be
// run: 127 when it is not found, 126 when it is found but not executable.
func lookCommand(name string) (path string, status int, err error) {
	path, err = exec.LookPath(name)
	switch {
	case err == nil:
		return path, 0, nil
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return "", exitNotFound, err
	}
	return "", exitCannotRun, err
}

// signalGroup sends sig to every process of the process group pgid (the
// command and whatever it started that stayed in its group). A group that
// has already exited is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether some process of the group pgid still runs.
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}

// signalName returns the usual name of sig, as in "SIGTERM".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return sig.String()
}
