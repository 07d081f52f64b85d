// Refusing a client beyond the client caps: it learns why from the answer
// to its first request instead of from a closed socket.

package server

import (
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/rnicd/proto"
)

// refuseWait bounds how long a refused connection may take to send its
// first request; a client sends it right after connecting.
const refuseWait = 2 * time.Second

// refuse answers the first request read from c with err (StatusLimit) and
// closes c. Descriptors that came with the request are closed unread.
func refuse(c *net.UnixConn, err error) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(refuseWait))
	buf := make([]byte, proto.MaxMessage)
	oob := make([]byte, unix.CmsgSpace(proto.MaxFDs*4))
	n, oobn, _, _, rerr := c.ReadMsgUnix(buf, oob)
	fds, _ := parseRights(oob[:oobn])
	closeFDs(fds)
	if rerr != nil || n < proto.HeaderLen || proto.Kind(buf[2]) != proto.KindRequest {
		return
	}
	msg := proto.AppendError(nil, proto.Op(le16(buf)), le32(buf[4:]), proto.StatusOf(err), err.Error())
	c.Write(msg)
}
