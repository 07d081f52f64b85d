package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

// unitFiles are rnicd's systemd units, as make install installs them
// (@bindir@ replaced by where rnicd is).
var unitFiles = []string{"rnicd.service", "rnicd.socket"}

// TestUnitSocketMatchesDaemon: the socket unit listens where rnicd's
// clients look by default and with the socket type rnicd serves.
func TestUnitSocketMatchesDaemon(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("systemd", "rnicd.socket"))
	if err != nil {
		t.Fatal(err)
	}
	// %t is /run for the system instance.
	want := "ListenSequentialPacket=%t/" + strings.TrimPrefix(ibv.DefaultSocket, "/run/")
	if !strings.HasPrefix(ibv.DefaultSocket, "/run/") || !strings.Contains(string(b), "\n"+want+"\n") {
		t.Errorf("rnicd.socket has no line %q (clients look in %s)", want, ibv.DefaultSocket)
	}
}

// TestUnitFilesVerify runs systemd-analyze verify on the units, for the
// system instance and a user's, and fails on any complaint (unknown keys
// are only warnings to it, so its output must be empty). The man page
// their Documentation= names is not installed here: the install test
// checks it is in the installed tree.
func TestUnitFilesVerify(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd): the unit files are not verified")
	}
	bin := buildRnicd(t)
	dir := t.TempDir()
	var paths []string
	for _, name := range unitFiles {
		b, err := os.ReadFile(filepath.Join("systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), "@bindir@", filepath.Dir(bin))), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	// A user instance needs a runtime directory to resolve %t.
	runtime := filepath.Join(dir, "xdg")
	if err := os.Mkdir(runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"--system", "--user"} {
		cmd := exec.Command(tool, append([]string{"verify", "--man=no", mode}, paths...)...)
		cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+runtime)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("systemd-analyze verify %s: %v\n%s", mode, err, out)
		}
	}
}
