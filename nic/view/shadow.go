// Shadowing a directory: a tmpfs over it holding every original entry
// (directories and device nodes bound from the original, symlinks made
// again) plus the view's own. A directory the view adds to (/dev,
// /sys/class) usually has no infiniband entry on the host, and a
// directory of the kernel's cannot be written, hence the tmpfs.

package view

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// shadow mounts a tmpfs over target with target's entries and add's,
// add's winning where both have a name; a directory both have is
// shadowed the same way, one level down, inside the new tmpfs. The
// tmpfs is read-only once filled.
func shadow(target string, add *Node) error {
	// The original stays reachable through this descriptor once the
	// tmpfs hides it: /proc/self/fd/N/NAME is the original NAME.
	fd, err := unix.Open(target, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("view: %s: %w", target, err)
	}
	defer unix.Close(fd)
	orig := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount("tmpfs", target, "tmpfs", unix.MS_NOSUID, "mode=0755"); err != nil {
		return fmt.Errorf("view: tmpfs on %s: %w", target, err)
	}
	if err := fill(target, orig, add); err != nil {
		return fmt.Errorf("view: %s: %w", target, err)
	}
	if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID, ""); err != nil {
		return fmt.Errorf("view: read-only %s: %w", target, err)
	}
	return nil
}

// fill makes, in the empty directory dst, every entry of the original
// directory orig and of add.
func fill(dst, orig string, add *Node) error {
	entries, err := os.ReadDir(orig)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		mine := add.Dir[name]
		if mine != nil && !(mine.Dir != nil && e.IsDir()) {
			continue // the view's own replaces it
		}
		if err := recreate(filepath.Join(dst, name), filepath.Join(orig, name), e.Type(), mine); err != nil {
			return err
		}
	}
	for _, name := range add.names() {
		path := filepath.Join(dst, name)
		if _, err := os.Lstat(path); err == nil {
			continue // a directory merged above
		}
		if err := add.Dir[name].write(path); err != nil {
			return err
		}
	}
	return nil
}

// recreate makes dst show the original entry src (of type typ); merge,
// if not nil, is a directory of the view's to merge into it.
func recreate(dst, src string, typ os.FileMode, merge *Node) error {
	switch {
	case merge != nil:
		if err := os.Mkdir(dst, 0o755); err != nil {
			return err
		}
		return fill(dst, src, merge)
	case typ&os.ModeSymlink != 0:
		to, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(to, dst)
	}
	return bindOnto(src, dst)
}
