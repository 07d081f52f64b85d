// Tests of libibverbs devices on rnicd's command line.

package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rnic/rnic/nic/tapnic"
)

func TestParseArgsVerbs(t *testing.T) {
	specs, err := devices([]string{"--verbs", "rxe0", "--device", "udp=127.0.0.2", "--device", "verbs=mlx5_0"})
	if err != nil {
		t.Fatal(err)
	}
	want := []deviceSpec{
		{Config: tapnic.Config{Name: "rxe0"}, Verbs: "rxe0"},
		{Config: tapnic.Config{Name: "rnic1"}, UDP: specs[1].UDP},
		{Config: tapnic.Config{Name: "mlx5_0"}, Verbs: "mlx5_0"},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("parseArgs:\n got %+v\nwant %+v", specs, want)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--verbs", "rxe0", "--mtu", "9000"}, "--verbs: a libibverbs device has its own name, port and addresses; --mtu do not apply"},
		{[]string{"--device", "verbs=rxe0,name=x,pcap=p"}, "verbs=: a libibverbs device has its own name, port and addresses; name=, pcap= do not apply"},
		{[]string{"--device", "verbs=rxe0,udp=127.0.0.2"}, "udp= do not apply"},
		{[]string{"--verbs", "rxe0", "--device", "verbs=rxe0"}, "two NICs are named rxe0"},
		{[]string{"--udp", "127.0.0.2", "--name", "rxe0", "--device", "verbs=rxe0"}, "two NICs are named rxe0"},
		{[]string{"--verbs", "a/b"}, `--verbs: "a/b" is not a device name`},
		{[]string{"--device", "ip=10.0.0.3/24"}, "tap=, udp= or tcp= is required (or verbs=)"},
	} {
		if specs, err := devices(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseArgs(%q) = %+v, %v; want an error containing %q", tc.args, specs, err, tc.want)
		}
	}
}
