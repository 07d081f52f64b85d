package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// The image's paths: make install's layout under /usr/local, so that rnic
// exec and rnic k8s device-plugin --install-libs find the libraries in
// ../lib/rnic beside rnic. The manifests in cmd/rnic/k8s run these.
const (
	imageBinDir = "/usr/local/bin"
	imageLibDir = "/usr/local/lib/rnic"
)

// rnicConfig is how a container of the image runs by default: rnicd, with
// its socket where the DaemonSet mounts the node's /run/rnic.
var rnicConfig = runConfig{
	Env: []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	Cmd: []string{imageBinDir + "/rnicd"},
}

// file is one regular file of the layer.
type file struct {
	src  string // on this host
	path string // in the image, absolute
	mode int64
}

// rnicFiles are the programs in bin and the drop-in libraries in lib.
// librdmacm.so.1 is optional, as make build makes it (it needs
// librdmacm-dev); the rest is not.
func rnicFiles(bin, lib string) ([]file, error) {
	var out []file
	for _, f := range []struct {
		src, dir string
		optional bool
	}{
		{filepath.Join(bin, "rnic"), imageBinDir, false},
		{filepath.Join(bin, "rnicd"), imageBinDir, false},
		{filepath.Join(lib, "libibverbs.so.1"), imageLibDir, false},
		{filepath.Join(lib, "librdmacm.so.1"), imageLibDir, true},
	} {
		if _, err := os.Stat(f.src); err != nil {
			if f.optional {
				continue
			}
			return nil, fmt.Errorf("%w (make build makes it)", err)
		}
		out = append(out, file{src: f.src, path: filepath.Join(f.dir, filepath.Base(f.src)), mode: 0o755})
	}
	return out, nil
}
