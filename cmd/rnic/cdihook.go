// rnic cdi hook: the OCI createContainer hook of the CDI spec. The runtime
// runs it in the container's namespaces, before the container pivots to
// its root, with the container's state on standard input; it adds the
// daemon's NICs to the container's /sys/class (nic/view).

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/view"
)

// ociState is what of the OCI runtime state the hook reads.
type ociState struct {
	Bundle string `json:"bundle"`
}

// ociConfig is what of the bundle's config.json the hook reads.
type ociConfig struct {
	Root struct {
		Path string `json:"path"`
	} `json:"root"`
}

func runCDIHook(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic cdi hook", pflag.ContinueOnError)
	socket := fs.StringP("socket", "S", ibv.DefaultSocket, "the rnicd's control socket, as the host sees it")
	if done, st := parseCDIFlags(fs, args, stdout, stderr); done {
		return st
	}
	rootfs, err := containerRoot(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "rnic cdi hook: %v\n", err)
		return 1
	}
	devs, err := view.Gather(*socket)
	if err == nil {
		err = view.ShowInContainer(rootfs, devs)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rnic cdi hook: %v\n", err)
		return 1
	}
	return 0
}

// containerRoot reads the OCI state and returns the container's root
// file system's path, from the bundle's config.json.
func containerRoot(stdin io.Reader) (string, error) {
	var st ociState
	if err := json.NewDecoder(stdin).Decode(&st); err != nil {
		return "", fmt.Errorf("the OCI state on standard input: %w", err)
	}
	if st.Bundle == "" {
		return "", fmt.Errorf("the OCI state names no bundle")
	}
	b, err := os.ReadFile(filepath.Join(st.Bundle, "config.json"))
	if err != nil {
		return "", fmt.Errorf("the bundle's config: %w", err)
	}
	var c ociConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("the bundle's config: %w", err)
	}
	root := c.Root.Path
	if root == "" {
		return "", fmt.Errorf("the bundle's config names no root")
	}
	if !filepath.IsAbs(root) {
		root = filepath.Join(st.Bundle, root)
	}
	return root, nil
}
