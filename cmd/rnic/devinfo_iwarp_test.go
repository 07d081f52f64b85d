package main

import (
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
)

// TestDevinfoTransport: devinfo says what each device speaks, as
// ibv_devinfo does for siw and rxe: a daemon's iWARP NIC is iWARP (1) with
// plain GIDs, a RoCEv2 NIC InfiniBand (0) with RoCE v2 GIDs.
func TestDevinfoTransport(t *testing.T) {
	iw := rnicdtest.Start(t, rnicdtest.Options{IWARP: true})
	roce := rnicdtest.Start(t, rnicdtest.Options{})
	for _, c := range []struct {
		what     string
		spec     string
		want     string
		roceGIDs bool
	}{
		{"iWARP", iw.Spec(0).String(), "\ttransport:              iWARP (1)\n", false},
		{"RoCEv2", roce.Spec(0).String(), "\ttransport:              InfiniBand (0)\n", true},
	} {
		out, errOut, code := rnic(t, "devinfo", "-d", c.spec)
		if code != 0 || errOut != "" {
			t.Fatalf("%s: exit %d, stderr %q\n%s", c.what, code, errOut, out)
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: no %q in\n%s", c.what, c.want, out)
		}
		if strings.Contains(out, "RoCE v2") != c.roceGIDs {
			t.Errorf("%s: RoCE v2 GIDs shown: %v, want %v\n%s", c.what, !c.roceGIDs, c.roceGIDs, out)
		}
	}
}
