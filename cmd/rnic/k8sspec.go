// The node's CDI spec kept in step with the daemon's NICs by rnic k8s
// device-plugin (--cdi-spec): the CDI names Allocate returns resolve only
// where a spec on the node names them, and a DaemonSet has no other place
// to run rnic cdi generate from.

package main

import (
	"context"
	"slices"

	"github.com/rnic/rnic/cmd/internal/cdispec"
	"github.com/rnic/rnic/cmd/internal/deviceplugin"
)

// specKeeper writes the spec of the NICs an inventory lists, again
// whenever their names change. The paths are the node's.
type specKeeper struct {
	path string // where the spec goes (/var/run/cdi/rnic.yaml)
	opts cdispec.Options
	logf func(string, ...any)
	// socketOf, if set, is the socket of each NIC's own tenant.
	socketOf func(nic string) string
	wrote    []string // the NIC names of the spec last written
	failed   bool     // the last write failed: try again at the next poll
}

// wrap returns inv, with the spec rewritten after each answer that names
// other NICs than the spec last written. A daemon that does not answer
// leaves the spec as it is (its NICs are unhealthy, not gone).
func (k *specKeeper) wrap(inv deviceplugin.Inventory) deviceplugin.Inventory {
	return func(ctx context.Context) ([]deviceplugin.NIC, error) {
		nics, err := inv(ctx)
		if err == nil {
			k.keep(nics)
		}
		return nics, err
	}
}

func (k *specKeeper) keep(nics []deviceplugin.NIC) {
	names := make([]string, len(nics))
	for i, n := range nics {
		names[i] = n.Name
	}
	if len(names) == 0 || (!k.failed && slices.Equal(names, k.wrote)) {
		return
	}
	err := k.write(names)
	if k.failed = err != nil; k.failed {
		k.logf("CDI spec %s: %v", k.path, err)
		return
	}
	k.wrote = names
	k.logf("CDI spec %s: %d NICs", k.path, len(names))
}

// write numbers the NICs as the daemon lists them: the N of uverbsN is
// the NIC's place in that list, as rnic cdi generate numbers them.
func (k *specKeeper) write(names []string) error {
	nics := make([]cdispec.NIC, len(names))
	for i, n := range names {
		nics[i] = cdispec.NIC{Index: i, Name: n}
		if k.socketOf != nil {
			nics[i] = cdispec.NIC{Index: 0, Name: n, Socket: k.socketOf(n)}
		}
	}
	spec, err := cdispec.Spec(nics, k.opts)
	if err != nil {
		return err
	}
	return cdispec.Write(spec, k.path)
}
