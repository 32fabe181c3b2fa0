package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

const (
	libraryPath = "github.com/redislock/redislock"
	cliPath     = "github.com/redislock/redislock/cmd/redislock"
)

// TestReleaseBuild checks what RELEASING.md promises: once the library and
// this module are tagged at the version this go.mod requires, "go install
// github.com/redislock/redislock/cmd/redislock@VERSION" works, with no
// workspace and no replace directive. It plays the release through a
// module proxy of its own (GOPROXY=file://), made from the working tree in
// the layout the go command reads (@v/list, .info, .mod, .zip):
//
//  1. the library, zipped from the repository root, as VERSION;
//  2. a copy of this module whose go.sum "go mod tidy" completes against
//     that proxy (the release step that records the library's checksum);
//  3. that copy, zipped as cmd/redislock at VERSION;
//  4. go install …/cmd/redislock@VERSION with GOWORK=off into a GOBIN of
//     its own, and the installed binary runs.
//
// Every other module comes from the local module cache (its download
// directory is a proxy too), so the test needs no network once the
// module's dependencies are downloaded; it falls back to $GOPROXY for any
// that are not. It uses a module cache of its own, so the fake release
// never reaches the real one.
//
// It is not parallel: its go commands compile the tool, which would load
// the CPUs under the timing-sensitive tests of this package.
func TestReleaseBuild(t *testing.T) {
	version := requiredLibraryVersion(t)
	gocmd := goCommand(t)
	realCache := goEnv(t, gocmd, "GOMODCACHE")
	// After the local proxies, the usual one, for a module the local cache
	// lacks (a fresh machine): then the test needs the network.
	fallback := ""
	if p := goEnv(t, gocmd, "GOPROXY"); p != "" && p != "off" {
		fallback = "," + p
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	env := append(os.Environ(),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
		"GOFLAGS=-modcacherw -mod=mod -trimpath", // -trimpath: build cache hits across runs
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(realCache, "cache", "download"))+fallback,
		// The fake release is in no checksum database, and go install
		// …@version checks every dependency there (not against the
		// installed module's go.sum). The dependencies come from the local
		// module cache, verified when it downloaded them.
		"GOSUMDB=off",
		"GOPRIVATE=",
		"GONOPROXY=",
		"GOBIN="+filepath.Join(tmp, "bin"),
	)

	publish(t, proxy, module.Version{Path: libraryPath, Version: version}, root)

	// The release commit of this module: go.sum gains the library's lines.
	cli := filepath.Join(tmp, "cli")
	copyModule(t, ".", cli)
	runGo(t, env, cli, gocmd, "mod", "tidy")
	sum, err := os.ReadFile(filepath.Join(cli, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(sum, []byte(libraryPath+" "+version+" ")) {
		t.Fatalf("go.sum after go mod tidy has no line for %s %s:\n%s", libraryPath, version, sum)
	}
	publish(t, proxy, module.Version{Path: cliPath, Version: version}, cli)

	// What a user types, from a directory outside any module.
	outside := filepath.Join(tmp, "user")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	runGo(t, env, outside, gocmd, "install", cliPath+"@"+version)
	out := runGo(t, env, outside, filepath.Join(tmp, "bin", "redislock"), "--help")
	if !strings.Contains(out, "redislock run") {
		t.Errorf("installed redislock --help does not list the run command:\n%s", out)
	}
}

// requiredLibraryVersion returns the version of the library that this
// module's go.mod requires. It must be a release, not a pseudo-version or a
// placeholder: "go install …@VERSION" resolves exactly that.
func requiredLibraryVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Replace {
		t.Errorf("go.mod replaces %s: go install …@version refuses a module with a replace directive; development uses ../../go.work", r.Old.Path)
	}
	for _, r := range f.Require {
		if r.Mod.Path != libraryPath {
			continue
		}
		if module.IsPseudoVersion(r.Mod.Version) || strings.HasPrefix(r.Mod.Version, "v0.0.0-") {
			t.Fatalf("go.mod requires %s %s: want a release version (RELEASING.md)", libraryPath, r.Mod.Version)
		}
		return r.Mod.Version
	}
	t.Fatalf("go.mod does not require %s", libraryPath)
	return ""
}

// goCommand returns the go binary of the toolchain that runs the tests (so
// that GOTOOLCHAIN=go1.27.3 make test-go1.27 tests the release with 1.27).
func goCommand(t *testing.T) string {
	t.Helper()
	goroot := goEnv(t, "go", "GOROOT")
	return filepath.Join(goroot, "bin", "go")
}

func goEnv(t *testing.T, gocmd, name string) string {
	t.Helper()
	out, err := exec.Command(gocmd, "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// publish adds m, zipped from dir (nested modules, VCS directories and
// vendor/ left out, as the go command does), to the file proxy at proxy.
func publish(t *testing.T, proxy string, m module.Version, dir string) {
	t.Helper()
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	vdir := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	if err := modzip.CreateFromDir(&zipped, m, dir); err != nil {
		t.Fatalf("zip %s@%s from %s: %v", m.Path, m.Version, dir, err)
	}
	for name, data := range map[string][]byte{
		"list":              []byte(m.Version + "\n"),
		m.Version + ".info": info,
		m.Version + ".mod":  gomod,
		m.Version + ".zip":  zipped.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyModule copies the regular files of the module in src (not its
// nested directories' build output) to dst.
func copyModule(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() || rel == "redislock" { // not the output of go build
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runGo runs name with args in dir and returns its combined output; it fails
// the test when the command fails.
func runGo(t *testing.T, env []string, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", filepath.Base(name), strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}
