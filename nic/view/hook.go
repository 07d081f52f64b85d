// TAP mode: the daemon may bridge a view's interface onto its NIC's wire,
// so that the program's kernel traffic (its TCP side channel, ping) goes
// where the NIC's RoCEv2 goes.

package view

import (
	"errors"
	"io"
	"net"
	"os"
)

// ErrNotSupported is what AttachHostPort returns when the daemon cannot
// bridge a TAP for the device (not a TAP-mode NIC, or no such op): the
// view's interface then stays local to the view.
var ErrNotSupported = errors.New("view: the daemon does not bridge this device's port")

// AttachHostPort hands the view's TAP for device to the rnicd on socket,
// which bridges it onto the NIC's wire; mac is the MAC the TAP must take
// (set before the TAP goes up), closer ends the bridging. The holder
// calls it once per NIC; the default bridges nothing.
var AttachHostPort = func(socket, device string, tap *os.File) (mac net.HardwareAddr, closer io.Closer, err error) {
	return nil, nil, ErrNotSupported
}
