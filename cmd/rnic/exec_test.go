package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fakeLibDir makes a directory with a file named like the drop-in
// library (rnic exec only checks that it is there).
func fakeLibDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, dropinLib), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestExecHelper is not a test: TestExec runs this test binary as
// "rnic exec ARGS..." through it.
func TestExecHelper(t *testing.T) {
	args, ok := os.LookupEnv("RNIC_EXEC_HELPER_ARGS")
	if !ok {
		return
	}
	os.Exit(run(strings.Split(args, "\x1f")[1:], os.Stdout, os.Stderr))
}

// execRnic runs "rnic exec args..." in a child process with env added.
func execRnic(t *testing.T, env []string, args ...string) (stdout, stderr string, state *os.ProcessState) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecHelper$")
	// The view's directory is the test's, not this user's.
	cmd.Env = append(os.Environ(), "RNIC_VIEW_DIR="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	cmd.Env = append(cmd.Env, "RNIC_EXEC_HELPER_ARGS="+strings.Join(append([]string{"", "exec"}, args...), "\x1f"))
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return o.String(), e.String(), cmd.ProcessState
}

// TestExec: the program sees the library first on LD_LIBRARY_PATH (the
// old path kept after it) and the socket; its exit status and the signal
// that kills it are its own, since rnic exec replaced itself with it.
func TestExec(t *testing.T) {
	lib := fakeLibDir(t)
	env := []string{"RNIC_LIBDIR=" + lib, "LD_LIBRARY_PATH=/old/path", "RNIC_SOCKET=/elsewhere.sock"}
	out, errOut, st := execRnic(t, env, "-S", "/tmp/x.sock", "--", "sh", "-c", `echo "$LD_LIBRARY_PATH $RNIC_SOCKET $0 $1"; exit 7`, "a", "b")
	if want := lib + ":/old/path /tmp/x.sock a b\n"; out != want || st.ExitCode() != 7 {
		t.Errorf("stdout %q exit %d, want %q exit 7; stderr %s", out, st.ExitCode(), want, errOut)
	}
	// No -S: the default rule, here $RNIC_SOCKET; a relative path is made absolute.
	out, errOut, st = execRnic(t, []string{"RNIC_LIBDIR=" + lib, "RNIC_SOCKET=rel.sock"}, "sh", "-c", `echo "$RNIC_SOCKET"`)
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "rel.sock") + "\n"; out != want || st.ExitCode() != 0 {
		t.Errorf("stdout %q exit %d, want %q; stderr %s", out, st.ExitCode(), want, errOut)
	}
	_, errOut, st = execRnic(t, env, "--", "sh", "-c", "kill -TERM $$")
	if ws := st.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("program killed by SIGTERM: status %v; stderr %s", st, errOut)
	}
}

// TestExecErrors: each failure says what is wrong with its own status.
func TestExecErrors(t *testing.T) {
	lib := fakeLibDir(t)
	for _, c := range []struct {
		env  []string
		args []string
		code int
		want string
	}{
		{[]string{"RNIC_LIBDIR=" + lib}, nil, 2, "no program to run"},
		{[]string{"RNIC_LIBDIR=" + lib}, []string{"--bogus", "true"}, 2, "unknown flag"},
		{[]string{"RNIC_LIBDIR=" + t.TempDir()}, []string{"true"}, 1, "libibverbs.so.1 in"},
		{[]string{"RNIC_LIBDIR=" + lib}, []string{"no-such-program-rnic"}, 127, "program not found"},
		{[]string{"RNIC_LIBDIR=" + lib}, []string{lib + "/" + dropinLib}, 126, "cannot be run"},
	} {
		_, errOut, st := execRnic(t, c.env, c.args...)
		if st.ExitCode() != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("rnic exec %q: exit %d, stderr %q; want exit %d and %q", c.args, st.ExitCode(), errOut, c.code, c.want)
		}
	}
}

// TestFindLibDirBesideBinary: without RNIC_LIBDIR the library is in ../lib
// beside the binary, found through a symlink to the binary too.
func TestFindLibDirBesideBinary(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"bin", "lib", "elsewhere"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(root, "bin", "rnic")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "elsewhere", "rnic")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	if _, err := findLibDir("", link); !errors.Is(err, errNoLibrary) {
		t.Fatalf("no library yet: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib", dropinLib), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(root, "lib"))
	if got, err := findLibDir("", link); err != nil || got != want {
		t.Fatalf("findLibDir = %q, %v; want %q", got, err, want)
	}
}

// TestExecWithoutView: with no rnicd to show, rnic exec says in one line
// that the program runs without the view, and runs it; --no-view and
// RNIC_NO_VIEW run it without a word.
func TestExecWithoutView(t *testing.T) {
	lib := fakeLibDir(t)
	env := []string{"RNIC_LIBDIR=" + lib}
	sock := filepath.Join(t.TempDir(), "none.sock")
	out, errOut, st := execRnic(t, env, "-S", sock, "--", "echo", "ran")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if out != "ran\n" || st.ExitCode() != 0 || len(lines) != 1 || !strings.HasPrefix(lines[0], "rnic exec: running without the device view: ") {
		t.Errorf("no daemon: stdout %q exit %d stderr %q, want the program's output and one line on the view", out, st.ExitCode(), errOut)
	}
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{env, []string{"--no-view", "-S", sock, "--", "echo", "ran"}},
		{append(env, "RNIC_NO_VIEW=1"), []string{"-S", sock, "--", "echo", "ran"}},
	} {
		out, errOut, st := execRnic(t, c.env, c.args...)
		if out != "ran\n" || errOut != "" || st.ExitCode() != 0 {
			t.Errorf("%v %v: stdout %q exit %d stderr %q, want the program's output alone", c.env, c.args, out, st.ExitCode(), errOut)
		}
	}
}

// TestFindLibDirInstalled: an installed rnic (PREFIX/bin/rnic) finds the
// library in PREFIX/lib/rnic, its own directory, before PREFIX/lib, which
// may hold the system's libibverbs; with neither, the error names both.
func TestFindLibDirInstalled(t *testing.T) {
	prefix := t.TempDir()
	for _, d := range []string{"bin", "lib/rnic"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(prefix, "bin", "rnic")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(prefix)
	_, err := findLibDir("", bin)
	if want := filepath.Join(real, "lib", "rnic") + " or " + filepath.Join(real, "lib"); !errors.Is(err, errNoLibrary) || !strings.Contains(err.Error(), want) {
		t.Fatalf("no library: %v, want errNoLibrary naming %s", err, want)
	}
	for _, d := range []string{"lib", "lib/rnic"} { // a system libibverbs, then rnic's
		if err := os.WriteFile(filepath.Join(prefix, d, dropinLib), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := findLibDir("", bin); err != nil || got != filepath.Join(real, "lib", "rnic") {
		t.Fatalf("findLibDir = %q, %v; want %q", got, err, filepath.Join(real, "lib", "rnic"))
	}
}
