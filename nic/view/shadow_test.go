package view

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// shadowChildEnv names the directory TestShadow's child shadows.
const shadowChildEnv = "VIEW_TEST_SHADOW_DIR"

// TestShadow: in a mount namespace of its own, a shadowed directory keeps
// its entries (a subdirectory with what is mounted in it, a file, a
// symlink), gains the view's, merges a directory both have, and is
// read-only; the original directory, seen from outside, is unchanged.
func TestShadow(t *testing.T) {
	if d := os.Getenv(shadowChildEnv); d != "" {
		shadowChild(t, d)
		return
	}
	d := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(d, "sub", "deep"), 0o755))
	must(os.WriteFile(filepath.Join(d, "file"), []byte("orig"), 0o644))
	must(os.Symlink("file", filepath.Join(d, "link")))
	must(os.MkdirAll(filepath.Join(d, "infiniband"), 0o755))
	must(os.WriteFile(filepath.Join(d, "infiniband", "theirs"), []byte("t"), 0o644))
	c := exec.Command(os.Args[0], "-test.run=^TestShadow$", "-test.v")
	c.Env = append(os.Environ(), shadowChildEnv+"="+d)
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if uid, gid := os.Getuid(), os.Getgid(); uid != 0 {
		c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		c.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		c.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN} // kept across exec, as the holder's
	}
	out, err := c.CombinedOutput()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		t.Skipf("no mount namespace here: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "shadow ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	entries, _ := os.ReadDir(d)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "file infiniband link sub" {
		t.Errorf("outside, the directory holds %q, want it unchanged", got)
	}
}

func shadowChild(t *testing.T, d string) {
	add := dir()
	add.put("infiniband/uverbs0", file("x\n"))
	add.put("new", file("n\n"))
	add.put("file", file("mine\n"))
	check := func(err error) {
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
	}
	check(syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""))
	// Something mounted under a subdirectory comes along with it.
	check(syscall.Mount("tmpfs", filepath.Join(d, "sub", "deep"), "tmpfs", 0, ""))
	check(os.WriteFile(filepath.Join(d, "sub", "deep", "m"), []byte("mounted"), 0o644))
	check(shadow(d, add))
	for path, want := range map[string]string{
		"file": "mine\n", "link": "mine\n", "new": "n\n", "infiniband/uverbs0": "x\n",
		"infiniband/theirs": "t", "sub/deep/m": "mounted",
	} {
		b, err := os.ReadFile(filepath.Join(d, path))
		if err != nil || string(b) != want {
			fmt.Printf("%s: %q %v, want %q\n", path, b, err, want)
			os.Exit(1)
		}
	}
	if err := os.WriteFile(filepath.Join(d, "more"), nil, 0o644); err == nil {
		fmt.Println("the shadow is writable")
		os.Exit(1)
	}
	fmt.Println("shadow ok")
}
