// The per-user directory where holders are found: one creation lock, one
// liveness lock and one pid file per rnicd socket. Creation is
// serialized by the creation lock; a holder holds its liveness lock for
// its life, so a pid file whose liveness lock is free is stale.

package view

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DirEnv overrides the directory (tests); otherwise it is
// rnic-view-UID under $XDG_RUNTIME_DIR when that is this user's, else
// under the temporary directory.
const DirEnv = "RNIC_VIEW_DIR"

// paths are the files of one (uid, socket)'s view.
type paths struct {
	lock, alive, pid, log string
}

// pathsFor returns socket's files in this user's directory, made (0700)
// and checked: a directory someone else owns or may write could give
// another user's holder.
func pathsFor(socket string) (paths, error) {
	d, err := userDir()
	if err != nil {
		return paths{}, err
	}
	sum := sha256.Sum256([]byte(socket))
	base := filepath.Join(d, hex.EncodeToString(sum[:8]))
	return paths{lock: base + ".lock", alive: base + ".alive", pid: base + ".pid", log: base + ".log"}, nil
}

func userDir() (string, error) {
	uid := os.Getuid()
	d := os.Getenv(DirEnv)
	if d == "" {
		base := os.TempDir()
		if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && ownedDir(x, uid) {
			base = x
		}
		d = filepath.Join(base, fmt.Sprintf("rnic-view-%d", uid))
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("view: %w", err)
	}
	fi, err := os.Lstat(d)
	if err != nil {
		return "", fmt.Errorf("view: %w", err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st == nil || int(st.Uid) != uid || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("view: %s is not a directory of uid %d with mode 0700", d, uid)
	}
	return d, nil
}

// ownedDir reports whether path is a directory uid owns.
func ownedDir(path string, uid int) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// lock opens path (made 0600) and takes its flock: LOCK_EX waits,
// LOCK_EX|LOCK_NB fails at once with EWOULDBLOCK.
func lock(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("view: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Holder is a live holder: its pid and its namespaces (as
// /proc/PID/ns/NAME links read, "mnt:[4026532308]"), recorded by the
// holder itself, since a program in the view may not read the holder's
// /proc entries (the holder keeps capabilities there).
type Holder struct {
	PID int
	NS  map[string]string // by name: mnt, net, user
}

// viewNS are the namespaces a holder records.
var viewNS = []string{"mnt", "net", "user"}

// liveHolder returns the holder of p, or nil when there is none (no pid
// file, or its liveness lock is free: a holder that died).
func liveHolder(p paths) (*Holder, error) {
	f, err := lock(p.alive, unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		f.Close() // free: no holder
		return nil, nil
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		return nil, err
	}
	b, err := os.ReadFile(p.pid)
	if err != nil {
		return nil, fmt.Errorf("view: a holder lives but %w", err)
	}
	h := &Holder{NS: map[string]string{}}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	h.PID, err = strconv.Atoi(lines[0])
	if err != nil || h.PID <= 0 || len(lines) != 1+len(viewNS) {
		return nil, fmt.Errorf("view: bad pid file %s", p.pid)
	}
	for i, ns := range viewNS {
		h.NS[ns] = lines[1+i]
	}
	return h, nil
}

// writeHolder replaces the pid file, in one step, with this process's
// pid and namespaces.
func writeHolder(path string) error {
	s := strconv.Itoa(os.Getpid()) + "\n"
	for _, ns := range viewNS {
		l, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return err
		}
		s += l + "\n"
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
