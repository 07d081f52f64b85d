package main

// make install, as a packager runs it (DESTDIR, PREFIX=/usr), and the
// installed tree used as a user would: the programs run, the man pages
// and units are where man and systemd look, and the installed rnic exec
// runs an unmodified program on the installed libraries against the
// installed rnicd, as nobody when the test runs as root.

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// installedTree is a make install into a temporary DESTDIR.
type installedTree struct {
	dir    string   // temporary, readable by nobody
	root   string   // DESTDIR; the tree is below root/usr
	vars   []string // make's variables: DESTDIR, PREFIX, BIN, LIBDIR
	libs   bool     // make build built the drop-in libraries
	output string   // make's
}

func (it installedTree) path(p string) string { return filepath.Join(it.root, "usr", p) }

// make runs make target in the checkout with the tree's variables.
func (it installedTree) make(target string) ([]byte, error) {
	args := append([]string{"--no-print-directory", "-C", "../..", target}, it.vars...)
	return exec.Command("make", args...).CombinedOutput()
}

// makeInstall builds into a temporary directory (BIN, LIBDIR: nothing of
// the checkout changes) and installs into DESTDIR there.
func makeInstall(t *testing.T) installedTree {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: make install not tested")
	}
	dir, err := os.MkdirTemp("", "rnic-install-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // nobody runs what is installed
		t.Fatal(err)
	}
	it := installedTree{dir: dir, root: filepath.Join(dir, "root")}
	build := filepath.Join(dir, "build")
	it.vars = []string{"DESTDIR=" + it.root, "PREFIX=/usr", "BIN=" + build, "LIBDIR=" + filepath.Join(build, "lib")}
	out, err := it.make("install")
	it.output = string(out)
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	_, err = os.Stat(filepath.Join(build, "lib", dropinLib))
	it.libs = err == nil
	return it
}

// TestMakeInstall checks the installed tree, runs ibv_devices through the
// installed rnic exec, and checks that make uninstall leaves no file.
func TestMakeInstall(t *testing.T) {
	it := makeInstall(t)
	t.Run("tree", func(t *testing.T) {
		for _, p := range []string{"rnic", "rnicd"} {
			out, err := exec.Command(it.path("bin/"+p), "--version").Output()
			if err != nil || !strings.HasPrefix(string(out), p+" ") {
				t.Errorf("installed %s --version: %v, %q", p, err, out)
			}
		}
		checkManPages(t, it)
		checkUnits(t, it)
		checkWiresharkPlugin(t, it)
	})
	t.Run("exec", func(t *testing.T) {
		if !it.libs {
			if !strings.Contains(it.output, "install: the drop-in libraries are not built") {
				t.Errorf("no libraries built, and make install did not say so:\n%s", it.output)
			}
			t.Skip("the drop-in libraries are not built here (gcc, libibverbs-dev): installed rnic exec not run")
		}
		for _, so := range []string{"libibverbs.so.1", "librdmacm.so.1"} {
			if _, err := os.Stat(it.path("lib/rnic/" + so)); err != nil {
				t.Errorf("library not installed: %v", err)
			}
		}
		execInstalled(t, it)
	})
	t.Run("uninstall", func(t *testing.T) {
		if out, err := it.make("uninstall"); err != nil {
			t.Fatalf("make uninstall: %v\n%s", err, out)
		}
		filepath.WalkDir(it.root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				t.Errorf("left after make uninstall: %s", path)
			}
			return err
		})
	})
}

// checkManPages: rnic(1), a page per command rnic help lists, rnicd(8).
func checkManPages(t *testing.T, it installedTree) {
	t.Helper()
	out, err := exec.Command(it.path("bin/rnic"), "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"man1/rnic.1", "man8/rnicd.8"}
	_, list, _ := strings.Cut(string(out), "\ncommands:\n")
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		if name := strings.Fields(l)[0]; name != "help" && name != "version" {
			pages = append(pages, "man1/rnic-"+name+".1")
		}
	}
	for _, p := range pages {
		if fi, err := os.Stat(it.path("share/man/" + p)); err != nil || fi.Size() == 0 {
			t.Errorf("man page %s: %v", p, err)
		}
	}
}

// checkUnits: the units, for the system and the user instance, start the
// installed rnicd, and the man page they name is installed.
func checkUnits(t *testing.T, it installedTree) {
	t.Helper()
	for _, dir := range []string{"lib/systemd/system", "lib/systemd/user"} {
		for _, u := range []string{"rnicd.service", "rnicd.socket"} {
			b, err := os.ReadFile(it.path(dir + "/" + u))
			if err != nil {
				t.Error(err)
				continue
			}
			s := string(b)
			if strings.Contains(s, "@bindir@") || (u == "rnicd.service" && !strings.Contains(s, "\nExecStart=/usr/bin/rnicd ")) {
				t.Errorf("%s/%s does not start /usr/bin/rnicd:\n%s", dir, u, s)
			}
			if !strings.Contains(s, "\nDocumentation=man:rnicd(8)\n") {
				t.Errorf("%s/%s names no man page rnicd(8)", dir, u)
			}
		}
	}
}

// execInstalled starts the installed rnicd and runs ibv_devices through
// the installed rnic exec, with neither RNIC_LIBDIR nor LD_LIBRARY_PATH
// set: only the lookup beside the binary can find the library, and only
// rnic's library lists rnicd's NIC.
func execInstalled(t *testing.T, it installedTree) {
	t.Helper()
	if _, err := exec.LookPath("ibv_devices"); err != nil {
		t.Skip("ibv_devices is not installed (apt-get install ibverbs-utils): installed rnic exec not run")
	}
	uid, gid := os.Getuid(), os.Getgid()
	if uid == 0 {
		uid, gid = nobodyIDs(t)
	}
	run := filepath.Join(it.dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, uid, gid); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(run, "rnicd.sock")
	env := []string{"PATH=" + os.Getenv("PATH")}
	daemon := asUser(exec.Command(it.path("bin/rnicd"), "--udp", rnicdtest.LoopbackAddr().String(), "--socket", sock), uid, gid, env)
	waitServing(t, daemon, sock)

	cmd := asUser(exec.Command(it.path("bin/rnic"), "exec", "--no-view", "-S", sock, "--", "ibv_devices"), uid, gid, env)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "rnic0") {
		t.Errorf("installed rnic exec -- ibv_devices: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
}

// asUser runs cmd as uid:gid (no groups) when they are not this
// process's, with env alone, killed if the test dies first.
func asUser(cmd *exec.Cmd, uid, gid int, env []string) *exec.Cmd {
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if uid != os.Getuid() {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	return cmd
}

// waitServing starts daemon and waits until it serves on sock; the test's
// end stops it.
func waitServing(t *testing.T, daemon *exec.Cmd, sock string) {
	t.Helper()
	stdout, err := daemon.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	daemon.Stderr = &errb
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { daemon.Process.Kill(); daemon.Wait() }) // the one this test started
	serving := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "rnicd: serving rnic0 on "+sock {
				serving <- true
			}
		}
		close(serving)
	}()
	select {
	case ok := <-serving:
		if !ok {
			t.Fatalf("installed rnicd ended before serving:\n%s", errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("installed rnicd not serving within 20s:\n%s", errb.String())
	}
}

// nobodyIDs are the uid and gid of nobody, whom root runs programs as.
func nobodyIDs(t *testing.T) (int, int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("running as root, the test needs the user nobody to run the programs unprivileged: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

// checkWiresharkPlugin: rnic.lua is installed once, as the file in the
// checkout, where tshark on this machine loads Lua plugins from (when
// tshark is installed) or under PREFIX/share/rnic.
func checkWiresharkPlugin(t *testing.T, it installedTree) {
	t.Helper()
	want, err := os.ReadFile("../internal/wireshark/rnic.lua")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	filepath.WalkDir(it.root, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "rnic.lua" {
			found = append(found, path)
		}
		return err
	})
	if len(found) != 1 {
		t.Fatalf("rnic.lua installed %d times: %v", len(found), found)
	}
	if got, err := os.ReadFile(found[0]); err != nil || string(got) != string(want) {
		t.Errorf("installed %s differs from the checkout's (%v)", found[0], err)
	}
	dir := filepath.Dir(strings.TrimPrefix(found[0], it.root))
	if out, err := exec.Command("tshark", "-G", "folders").Output(); err == nil {
		if !strings.Contains(string(out), dir+"\n") {
			t.Errorf("rnic.lua installed in %s, which tshark -G folders does not list:\n%s", dir, out)
		}
	} else if dir != "/usr/share/rnic/wireshark" {
		t.Errorf("without tshark, rnic.lua installed in %s, want /usr/share/rnic/wireshark", dir)
	}
}
