// Command mkimage writes rnic's container image (make image): an OCI image
// layout, and the same as one tar file (what podman load, skopeo's
// oci-archive: and containerd's ctr images import read), holding rnic,
// rnicd and the drop-in libraries in one layer. No registry, no
// container tool: the layout is a handful of JSON files and a tarball.
//
//	go run ./cmd/internal/mkimage -bin DIR -lib DIR -name localhost/rnic:latest -o bin/rnic-image
//
// writes bin/rnic-image/ and bin/rnic-image.tar. The image is the same
// bytes for the same inputs: every file's time is SOURCE_DATE_EPOCH (0 if
// unset), owner root, entries in order.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin", "the directory holding rnic and rnicd (built static for the image)")
	lib := fs.String("lib", "lib", "the directory holding the drop-in libraries")
	name := fs.String("name", "localhost/rnic:latest", "the image's reference name")
	out := fs.String("o", "bin/rnic-image", "the OCI layout directory to write; OUT.tar gets the same as one file")
	arch := fs.String("arch", runtime.GOARCH, "the image's architecture (the binaries')")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mkimage: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	mtime, err := sourceDate()
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 2
	}
	files, err := rnicFiles(*bin, *lib)
	if err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	img := image{name: *name, arch: *arch, created: mtime, files: files, config: rnicConfig}
	if err := img.write(*out); err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	if err := tarDir(*out, *out+".tar", mtime); err != nil {
		fmt.Fprintf(stderr, "mkimage: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "mkimage: %s in %s and %s.tar\n", *name, *out, *out)
	return 0
}

// sourceDate is the time stamped on everything: SOURCE_DATE_EPOCH, as
// reproducible builds define it, else the epoch.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return time.Unix(n, 0).UTC(), nil
}
