// Reading requests: programs issue control calls in bursts (create, INIT,
// RTR, RTS; a thousand QPs at start-up), so after answering one a session
// polls for the next before it parks (proto/poll.go says why). An idle
// client costs one poll.Time of one P per burst.

package server

import "github.com/rnic/rnic/nic/rnicd/proto"

// readRequest reads the next message: polled for poll.Time from now, the
// last answer (clients in other processes), then waited for in the
// netpoller.
func (s *Session) readRequest(buf, oob []byte) proto.Received {
	if s.spin {
		s.poll.Received()
		if r, ok := proto.PollRecv(s.conn, buf, oob, &s.poll); ok {
			return r
		}
	}
	n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
	return proto.Received{N: n, OOBN: oobn, Flags: flags, Err: err}
}
