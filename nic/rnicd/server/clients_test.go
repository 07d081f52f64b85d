// The client caps: a connection beyond --max-clients or
// --max-clients-per-uid learns why from its first request, and a client
// that leaves frees its place.

package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/rnicdtest"
	"github.com/rnic/rnic/nic/rnicd/server"
)

func TestClientCaps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits server.Limits
		cap    int
		flag   string
	}{
		{"total", server.Limits{MaxClients: 2, MaxClientsPerUID: 5}, 2, "--max-clients)"},
		{"per uid", server.Limits{MaxClients: 5, MaxClientsPerUID: 3}, 3, "--max-clients-per-uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := rnicdtest.Start(t, rnicdtest.Options{Limits: tc.limits})
			var devs []ibv.Device
			for i := 0; i < tc.cap; i++ {
				dev, err := ibv.Open(d.Spec(0))
				if err != nil {
					t.Fatalf("client %d of %d: %v", i+1, tc.cap, err)
				}
				devs = append(devs, dev)
			}
			_, err := ibv.Open(d.Spec(0))
			if !errors.Is(err, client.ErrLimit) || !strings.Contains(err.Error(), tc.flag) {
				t.Fatalf("client %d: %v, want ErrLimit naming %s", tc.cap+1, err, tc.flag)
			}
			if _, err := client.QueryStat(d.Socket); !errors.Is(err, client.ErrLimit) {
				t.Errorf("stat beyond the cap: %v, want ErrLimit", err)
			}
			if got := d.Server.Stats().ClientsRefused; got != 2 {
				t.Errorf("clients_refused %d, want 2", got)
			}
			// A client that leaves frees its place (once the daemon has
			// reaped it).
			devs[0].Close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				dev, err := ibv.Open(d.Spec(0))
				if err == nil {
					devs[0] = dev
					break
				}
				if !errors.Is(err, client.ErrLimit) || time.Now().After(deadline) {
					t.Fatalf("a client after one left: %v", err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			for _, dev := range devs {
				dev.Close()
			}
		})
	}
}
