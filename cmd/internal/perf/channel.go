// The side channel between a client and a server: one TCP connection, used
// in lock-step as perftest uses its own (the client writes, then reads;
// the server reads, then writes).
//
// A RoCEv2 test speaks perftest's protocol (perftest.go); these are rnic's
// own messages, newline-terminated JSON, which two rnic sides add to it:
// the client's test parameters (so a server needs no flags but its
// address), the server's data check, the raw UDP measurement and the
// final result, which the server prints too. An iWARP test runs on these
// messages alone, with perftest's key messages: its hello, the connection
// manager's port, in a SEND bw test the server's receive credits.

package perf

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// protoVersion names this exchange; a server refuses another.
const protoVersion = "rnic-perf/1"

// ErrPeer is wrapped by errors the peer reported over the side channel.
var ErrPeer = errors.New("perf: the peer failed")

// channel is one side of the side channel.
type channel struct {
	conn net.Conn
	r    *bufio.Reader
	// perftest: the channel speaks perftest's protocol (perftest.go);
	// peerRnic: the peer said it is rnic, so it understands rnic's
	// JSON messages (an error line among them); mayFail: a fixed-size
	// read may find such an error line instead.
	perftest, peerRnic, mayFail bool
}

func newChannel(conn net.Conn) *channel { return &channel{conn: conn, r: bufio.NewReader(conn)} }

// maxLine bounds a JSON message, so a confused peer cannot make us buffer
// without end. The server's report carries every QP's keys, about 300
// bytes a QP: 32 MiB holds MaxQPs of them with room to spare.
const maxLine = 32 << 20

// send writes v as one line of JSON.
func (c *channel) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("perf: side channel: %w", err)
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("perf: side channel: %w", err)
	}
	return nil
}

// recv reads one line of JSON into v. A message whose "error" field is set
// is the peer's failure and is returned as an error wrapping ErrPeer.
func (c *channel) recv(v any) error {
	var line []byte
	for {
		frag, isPrefix, err := c.r.ReadLine()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("perf: side channel: %w", err)
		}
		line = append(line, frag...)
		if len(line) > maxLine {
			return fmt.Errorf("perf: side channel: message longer than %d bytes", maxLine)
		}
		if !isPrefix {
			break
		}
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		return fmt.Errorf("perf: side channel: %w", err)
	}
	if e.Error != "" {
		return fmt.Errorf("%w: %s", ErrPeer, e.Error)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("perf: side channel: %w", err)
	}
	return nil
}

// fail tells the peer why this side gives up; the error is best effort.
func (c *channel) fail(err error) {
	if c.perftest && !c.peerRnic && !c.mayFail {
		return // a perftest peer would take it for its next message
	}
	c.send(errMsg{Error: err.Error()})
}

// sendKey writes a key message with GID.
func (c *channel) sendKey(k Key) error {
	m := k.MarshalGID()
	if _, err := c.conn.Write(m[:]); err != nil {
		return fmt.Errorf("perf: side channel: send key: %w", err)
	}
	return nil
}

// recvKey reads a key message with GID.
func (c *channel) recvKey() (Key, error) {
	var m [KeyMsgSizeGID]byte
	if _, err := io.ReadFull(c.r, m[:]); err != nil {
		return Key{}, fmt.Errorf("perf: side channel: read key: %w", err)
	}
	return ParseKey(m[:])
}

// The messages, in the order they are sent.
type (
	// hello: client → server, the test to run.
	hello struct {
		Proto string `json:"proto"`
		// Transport is "iwarp" for an iWARP test, empty for RoCEv2; a
		// server refuses a test of the other transport.
		Transport  string     `json:"transport,omitempty"`
		Op         Op         `json:"op"`
		Mode       Mode       `json:"mode"`
		AtomicType AtomicType `json:"atomic_type,omitempty"`
		Size       int        `json:"size"`
		Iters      int        `json:"iters"`
		QPs        int        `json:"qps"`
		MTU        int        `json:"mtu"`
		TxDepth    int        `json:"tx_depth"`
		RxDepth    int        `json:"rx_depth"`
		CQMod      int        `json:"cq_mod"`
		UD         bool       `json:"ud,omitempty"`
		MW         bool       `json:"mw,omitempty"`
	}
	// ack: server → client after hello (then the keys), and again once
	// the server's QPs are connected and its receives posted. In an
	// iWARP test the first one names the port the server's connection
	// manager listens on, and the client sends one too, once its QPs
	// are connected.
	ack struct {
		OK        bool `json:"ok"`
		IWARPPort int  `json:"iwarp_port,omitempty"`
		// MW: the test runs through memory windows (--mw on either
		// side).
		MW bool `json:"mw,omitempty"`
	}
	// recvCredit: server → client during an iWARP SEND bw test, the
	// receives posted so far on a QP (a SEND that finds none would end
	// the connection: iWARP has no RNR retry); Done ends the series
	// once every message has arrived.
	recvCredit struct {
		QP     int  `json:"qp"`
		Posted int  `json:"posted"`
		Done   bool `json:"done,omitempty"`
	}
	// finished: client → server when the client's loop has ended.
	finished struct {
		Done bool `json:"done"`
	}
	// serverReport: server → client, the server's data check.
	serverReport struct {
		Check Check `json:"check"`
	}
	// rawRequest: client → server, a raw UDP measurement to take part in;
	// Kind "" means none.
	rawRequest struct {
		Kind     string `json:"kind"` // "bw" (the server counts) or "lat" (it echoes)
		Datagram int    `json:"datagram"`
		Count    int    `json:"count"`
	}
	// rawPort: server → client, where to send.
	rawPort struct {
		Port int `json:"port"`
	}
	// rawDone: client → server, the client has sent everything.
	rawDone struct {
		Sent int `json:"sent"`
	}
	// rawReport: server → client, what the server received (bw).
	rawReport struct {
		Received int   `json:"received"`
		SpanNS   int64 `json:"span_ns"`
	}
	// errMsg: either side, giving up.
	errMsg struct {
		Error string `json:"error"`
	}
)

// apply copies a hello's test parameters into c.
func (h *hello) apply(c *Config) {
	c.Op, c.Mode, c.AtomicType = h.Op, h.Mode, h.AtomicType
	c.Size, c.Iters, c.QPs, c.MTU = h.Size, h.Iters, h.QPs, h.MTU
	c.TxDepth, c.RxDepth, c.CQMod = h.TxDepth, h.RxDepth, h.CQMod
	c.UD = h.UD
	c.MW = c.MW || h.MW // the server's own --mw holds too
}

// helloOf is the hello announcing c's test.
func helloOf(c *Config) hello {
	h := hello{Proto: protoVersion, Op: c.Op, Mode: c.Mode, AtomicType: c.AtomicType,
		Size: c.Size, Iters: c.Iters, QPs: c.QPs, MTU: c.MTU,
		TxDepth: c.TxDepth, RxDepth: c.RxDepth, CQMod: c.CQMod, UD: c.UD, MW: c.MW}
	if c.IWARP {
		h.Transport = transportIWARP
	}
	return h
}

// transportIWARP is hello.Transport of an iWARP test.
const transportIWARP = "iwarp"

// checkTransport refuses a hello for the other transport than this
// server's, saying how to start the server instead.
func (h *hello) checkTransport(iwarp bool) error {
	switch {
	case h.Transport == transportIWARP && !iwarp:
		return fmt.Errorf("%w: the client runs iWARP; this server RoCEv2: start it with --iwarp too", ErrConfig)
	case h.Transport == "" && iwarp:
		return fmt.Errorf("%w: the client runs RoCEv2; this server iWARP: start it without --iwarp", ErrConfig)
	case h.Transport != "" && h.Transport != transportIWARP:
		return fmt.Errorf("%w: transport %q", ErrConfig, h.Transport)
	}
	return nil
}

// sideCloseWait bounds the wait for the peer's FIN in closeSideChannel.
const sideCloseWait = 2 * time.Second

// closeSideChannel closes conn in order once the test is over: this
// side's FIN, then the peer's, awaited for a while. Neither side then
// leaves a half-closed connection behind, which a TAP-mode NIC would
// reset as it closes (the capture would end in a RST).
func closeSideChannel(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		conn.SetReadDeadline(time.Now().Add(sideCloseWait))
		io.Copy(io.Discard, conn)
	}
	conn.Close()
}
