// rnic cdi list: what a container asking for each rnic.dev/nic device
// gets, read from the spec directories through the CDI module, as a
// runtime reads them.

package main

import (
	"fmt"
	"io"
	"strings"

	oci "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/spf13/pflag"
	"tags.cncf.io/container-device-interface/pkg/cdi"

	"github.com/rnic/rnic/cmd/internal/cdispec"
)

func runCDIList(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic cdi list", pflag.ContinueOnError)
	dirs := fs.StringArray("spec-dir", []string{"/etc/cdi", "/var/run/cdi"}, "a CDI spec directory (repeatable)")
	if done, st := parseCDIFlags(fs, args, stdout, stderr); done {
		return st
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(*dirs...), cdi.WithAutoRefresh(false))
	if err != nil {
		fmt.Fprintf(stderr, "rnic cdi list: %v\n", err)
		return 1
	}
	var names []string
	for _, n := range cache.ListDevices() {
		if strings.HasPrefix(n, cdispec.Kind+"=") {
			names = append(names, n)
		}
	}
	// What the runtime would refuse or drop (an invalid spec, a device
	// two specs name) is said, as the runtime would not.
	for path, errs := range cache.GetErrors() {
		for _, e := range errs {
			fmt.Fprintf(stderr, "rnic cdi list: %s: %v\n", path, e)
		}
	}
	if len(names) == 0 {
		fmt.Fprintf(stderr, "rnic cdi list: no %s devices in %s (rnic cdi generate writes them)\n", cdispec.Kind, strings.Join(*dirs, ", "))
		return 1
	}
	for _, n := range names {
		o := &oci.Spec{Process: &oci.Process{}, Linux: &oci.Linux{}}
		if _, err := cache.InjectDevices(o, n); err != nil {
			fmt.Fprintf(stderr, "rnic cdi list: %s: %v\n", n, err)
			return 1
		}
		printEdits(stdout, n, o)
	}
	return 0
}

// printEdits prints what injecting device name made of an empty spec
// (rnic's specs give no device nodes; another spec of the kind may).
func printEdits(w io.Writer, name string, o *oci.Spec) {
	fmt.Fprintf(w, "%s\n", name)
	for _, d := range o.Linux.Devices {
		fmt.Fprintf(w, "  device  %s (%s %d:%d)\n", d.Path, d.Type, d.Major, d.Minor)
	}
	for _, m := range o.Mounts {
		fmt.Fprintf(w, "  mount   %s from %s (%s)\n", m.Destination, m.Source, strings.Join(m.Options, ","))
	}
	for _, e := range o.Process.Env {
		fmt.Fprintf(w, "  env     %s\n", e)
	}
	if o.Hooks != nil {
		for _, h := range o.Hooks.CreateContainer {
			fmt.Fprintf(w, "  hook    createContainer %s\n", strings.Join(h.Args, " "))
		}
	}
}
