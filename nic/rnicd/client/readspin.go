// Reading replies: while a call waits, the reader polls for its reply
// before it parks (proto/poll.go says why), and after handing a reply
// over it yields its P, so that the caller runs at once on this P rather
// than after a wake-up of another.

package client

import "github.com/rnic/rnic/nic/rnicd/proto"

// readMessage reads the next message from the daemon.
func (d *Device) readMessage(buf, oob []byte) (n, oobn, flags int, err error) {
	if d.spin && d.calls.Load() > 0 {
		d.poll.Received() // poll.Time from now, while a call waits
		if r, ok := proto.PollRecv(d.conn, buf, oob, &d.poll); ok {
			return r.N, r.OOBN, r.Flags, r.Err
		}
	}
	n, oobn, flags, _, err = d.conn.ReadMsgUnix(buf, oob)
	return n, oobn, flags, err
}
