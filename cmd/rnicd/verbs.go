// libibverbs devices served as they are (--verbs rxe0, --device
// verbs=rxe0): rnicd opens the device through the passthrough backend and
// serves it like its own NICs, so clients reach a real device (rxe, siw,
// hardware) by NAME@SOCKET exactly as they reach an emulated one. Without
// -tags verbs the open fails with passthrough's rebuild hint.

package main

import (
	"fmt"
	"strings"

	"github.com/rnic/rnic/nic/ibv"
	_ "github.com/rnic/rnic/nic/passthrough" // verbs: devices (or the rebuild hint)
	"github.com/rnic/rnic/nic/tapnic"
)

// verbsSpecFromKeys builds the spec of a libibverbs device. The device
// owns its port, address and name: no other key means anything for it.
func verbsSpecFromKeys(kv map[string]string, name string, key func(string) string) (deviceSpec, error) {
	s := deviceSpec{Config: tapnic.Config{Name: name}, Verbs: name}
	if _, err := ibv.ParseSpec("verbs:" + name); err != nil {
		return s, fmt.Errorf("%s: %q is not a device name", key("verbs"), name)
	}
	var others []string
	for _, k := range deviceKeys {
		if _, ok := kv[k]; ok && k != "verbs" {
			others = append(others, key(k))
		}
	}
	if len(others) > 0 {
		return s, fmt.Errorf("%s: a libibverbs device has its own name, port and addresses; %s do not apply",
			key("verbs"), strings.Join(others, ", "))
	}
	return s, nil
}

// openVerbs opens the libibverbs device s names. openDevice calls it for
// a spec with Verbs set.
func openVerbs(s deviceSpec) (*device, error) {
	dev, err := ibv.Open(ibv.Spec{Backend: ibv.BackendVerbs, Name: s.Verbs})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Verbs, err)
	}
	d := &device{spec: s, dev: dev}
	d.ready = verbsReadyLine(dev)
	return d, nil
}

// verbsReadyLine says what came up, e.g.
// "rxe0: verbs port ACTIVE mtu 1024 gid fe80::1 gid ::ffff:10.77.0.33 ready".
func verbsReadyLine(dev ibv.Device) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: verbs", dev.Name())
	if a, err := dev.QueryPort(1); err == nil {
		fmt.Fprintf(&b, " port %s mtu %d", a.State.String(), a.ActiveMTU.Bytes())
	}
	for _, g := range dev.GIDs() {
		fmt.Fprintf(&b, " gid %s", g)
	}
	b.WriteString(" ready")
	return b.String()
}
