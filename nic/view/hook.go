// TAP mode: the daemon may bridge a view's interface onto its NIC's wire,
// so that the program's kernel traffic (its TCP side channel, ping) goes
// where the NIC's RoCEv2 goes.

package view

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"

	"github.com/rnic/rnic/nic/rnicd/client"
)

// ErrNotSupported is what AttachHostPort returns when the daemon cannot
// bridge a TAP for the device (not a TAP-mode NIC, or no such op): the
// view's interface then stays local to the view.
var ErrNotSupported = errors.New("view: the daemon does not bridge this device's port")

// AttachHostPort hands the view's TAP for device to the rnicd on socket,
// which bridges it onto the NIC's wire; mac is the MAC the TAP must take
// (set before the TAP goes up), closer ends the bridging. The holder
// calls it once per NIC; tests replace it. A closer that is a
// *client.HostPort also gives the NIC's prefixes (hostPrefixes).
var AttachHostPort = attachHostPort

// hostPrefixes are the NIC's addresses with their prefixes as the daemon
// gave them with the host port closer, if it did.
func hostPrefixes(closer io.Closer) []netip.Prefix {
	if hp, ok := closer.(*client.HostPort); ok {
		return hp.Prefixes
	}
	return nil
}

// attachHostPort asks rnicd (client.AttachHostPort). A NIC with no wire
// (not in the TAP mode) and an older daemon leave the view's interface
// local; any user gets a host port (a user's speaks only as the NIC).
func attachHostPort(socket, device string, tap *os.File) (net.HardwareAddr, io.Closer, error) {
	mac, closer, err := client.AttachHostPort(socket, device, tap)
	if errors.Is(err, client.ErrNotSupported) {
		return nil, nil, fmt.Errorf("%w: %v", ErrNotSupported, err)
	}
	return mac, closer, err
}
