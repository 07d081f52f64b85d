package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// labDir is the lab beside this package, the harness's default --lab.
const labDir = "lab"

// TestLabScriptsParse: every script of the lab parses (bash -n, sh -n for
// the initrd's busybox init) and is executable, since vm.sh and
// build-image.sh copy or run them as they are.
func TestLabScriptsParse(t *testing.T) {
	scripts := map[string]string{
		"build-image.sh": "bash", "vm.sh": "bash", "captures.sh": "bash",
		"guest/labinit": "bash", "guest/lab-agent": "bash", "guest/initrd-init": "sh",
	}
	for name, shell := range scripts {
		path := filepath.Join(labDir, name)
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if st.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", name)
		}
		if out, err := exec.Command(shell, "-n", path).CombinedOutput(); err != nil {
			t.Errorf("%s -n %s: %v: %s", shell, name, err, out)
		}
	}
}

// TestDefaultLabDir: without --lab the harness drives this lab, found from
// the repository root.
func TestDefaultLabDir(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	lab, out := "", t.TempDir()
	f := &flags{lab: &lab, out: &out}
	if err := f.dirs(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(lab, "vm.sh")); err != nil || lab != filepath.Join(root, "cmd", "interop", "lab") {
		t.Errorf("default lab %s: %v", lab, err)
	}
}

// TestICRCCheck: the lab's ICRC checker, which owes nothing to rnic's
// decoder, finds every RoCEv2 frame of the rxe captures sound, and a frame
// with one payload bit flipped wrong.
func TestICRCCheck(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to run icrc-check.py")
	}
	files, _ := filepath.Glob(filepath.Join(captures, "rxe-*.pcap"))
	if len(files) == 0 {
		t.Fatal("no rxe captures in " + captures)
	}
	checker := filepath.Join(labDir, "icrc-check.py")
	out, err := exec.Command(py, append([]string{checker}, files...)...).CombinedOutput()
	if err != nil || strings.Count(string(out), " icrc_bad=0\n") != len(files) || strings.Contains(string(out), "packets=0 ") {
		t.Fatalf("icrc-check.py over %d captures: %v\n%s", len(files), err, out)
	}

	b, err := os.ReadFile(filepath.Join(captures, "rxe-rc-pingpong.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-10] ^= 1 // in the last frame (a RoCEv2 one), six bytes before its ICRC
	bad := filepath.Join(t.TempDir(), "bad.pcap")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(py, checker, bad).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), " icrc_bad=1\n") {
		t.Fatalf("a flipped bit: exit %d, output\n%s", exitCode(err), out)
	}
}
