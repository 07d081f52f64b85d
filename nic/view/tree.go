// A tree of files to show: what sysfs.go and devfs.go build and
// shadow.go puts on a tmpfs.

package view

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Node is a directory, a file, a symlink, or a bind mount of a path.
type Node struct {
	Dir  map[string]*Node // a directory (non-nil, maybe empty)
	Data string           // a file's content (when Dir, Link, Bind are empty)
	Link string           // a symlink's target
	Bind string           // a path bound here (a device node: /dev/null)
}

func dir() *Node               { return &Node{Dir: map[string]*Node{}} }
func file(s string) *Node      { return &Node{Data: s} }
func symlink(to string) *Node  { return &Node{Link: to} }
func bindOf(path string) *Node { return &Node{Bind: path} }

// mkdirs returns the directory at the slash-separated path under n,
// making each missing one.
func (n *Node) mkdirs(path string) *Node {
	for _, p := range strings.Split(path, "/") {
		c := n.Dir[p]
		if c == nil {
			c = dir()
			n.Dir[p] = c
		}
		n = c
	}
	return n
}

// put sets the entry at the slash-separated path under n.
func (n *Node) put(path string, c *Node) {
	d, name := n, path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		d, name = n.mkdirs(path[:i]), path[i+1:]
	}
	d.Dir[name] = c
}

// Get returns the entry at the slash-separated path under n, or nil.
func (n *Node) Get(path string) *Node {
	for _, p := range strings.Split(path, "/") {
		if n == nil || n.Dir == nil {
			return nil
		}
		n = n.Dir[p]
	}
	return n
}

// names returns a directory's entries in order (deterministic writes).
func (n *Node) names() []string {
	out := make([]string, 0, len(n.Dir))
	for k := range n.Dir {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// write makes n at path, which must not exist (its parent must): files
// read-only as sysfs's are, bind mounts on an empty file or directory.
func (n *Node) write(path string) error {
	switch {
	case n.Dir != nil:
		if err := os.Mkdir(path, 0o755); err != nil {
			return err
		}
		for _, name := range n.names() {
			if err := n.Dir[name].write(filepath.Join(path, name)); err != nil {
				return err
			}
		}
		return nil
	case n.Link != "":
		return os.Symlink(n.Link, path)
	case n.Bind != "":
		return bindOnto(n.Bind, path)
	}
	return os.WriteFile(path, []byte(n.Data), 0o444)
}

// bindOnto binds src (a file or a directory, with what is mounted below
// it) at dst, making dst as an empty file or directory first.
func bindOnto(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.Mkdir(dst, 0o755)
	} else {
		err = os.WriteFile(dst, nil, 0o444)
	}
	if err != nil {
		return err
	}
	// MS_REC: a mount the namespace's creator inherited is locked and may
	// only be bound with everything under it.
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, dst, err)
	}
	return nil
}
