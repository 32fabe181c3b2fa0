package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionFiles: the completion scripts of the checkout (which make
// install installs) are what "redislock completion" prints: regenerate
// them with "go run . completion bash > completion/redislock.bash" and
// "go run . completion zsh > completion/_redislock".
func TestCompletionFiles(t *testing.T) {
	for _, tc := range []struct {
		file  string
		write func(w *bytes.Buffer)
	}{
		{"redislock.bash", func(w *bytes.Buffer) { writeBashCompletion(w) }},
		{"_redislock", func(w *bytes.Buffer) { writeZshCompletion(w) }},
	} {
		var want bytes.Buffer
		tc.write(&want)
		got, err := os.ReadFile(filepath.Join("completion", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("completion/%s differs from what redislock prints: regenerate it", tc.file)
		}
		for _, flag := range []string{"--wait", "-w", "--tls-ca", "--password-file", "--token", "--json"} {
			if !strings.Contains(want.String(), flag) {
				t.Errorf("completion/%s lacks %s", tc.file, flag)
			}
		}
	}
}

// TestManPage: redislock.1 documents every flag of run, status and
// release, with its short name.
func TestManPage(t *testing.T) {
	b, err := os.ReadFile("redislock.1")
	if err != nil {
		t.Fatal(err)
	}
	man := strings.ReplaceAll(string(b), `\-`, "-")
	for _, c := range completionCommands() {
		for _, f := range c.flags {
			for _, name := range f.names {
				if !strings.Contains(man, name) {
					t.Errorf("redislock.1 does not name %s %s", c.name, name)
				}
			}
		}
	}
}
