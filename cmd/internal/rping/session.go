// One side's verbs objects, as rping_setup_qp and rping_setup_buffers make
// them, and the completion handling of rping_cq_event_handler.

package rping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// rping's queue sizes (rping_create_qp, rping_setup_qp).
const (
	sqDepth  = 16          // RPING_SQ_DEPTH: max_send_wr
	rqDepth  = 2           // max_recv_wr
	cqDepth  = sqDepth * 2 // one CQ for sends and receives
	recvWRID = 1
	sendWRID = 2
	rdmaWRID = 3
)

// rping's test_state values, which its "wait for X state N" messages print.
const (
	stateConnected         = 5
	stateRDMAReadAdv       = 6
	stateRDMAReadComplete  = 7
	stateRDMAWriteAdv      = 8
	stateRDMAWriteComplete = 9
	stateDisconnected      = 10
	stateError             = 11
)

var stateNames = map[int]string{
	stateConnected: "CONNECTED", stateRDMAReadAdv: "RDMA_READ_ADV", stateRDMAReadComplete: "RDMA_READ_COMPLETE",
	stateRDMAWriteAdv: "RDMA_WRITE_ADV", stateRDMAWriteComplete: "RDMA_WRITE_COMPLETE",
}

// errDisconnected: the connection ended while a step waited for the peer
// (rping's DISCONNECTED state, which ends its loops without an error).
var errDisconnected = errors.New("rping: disconnected")

// session is one side's PD, CQ, QP and registered buffers. The buffers
// come from the device (ibv.Device.AllocBuffer), so that any backend can
// reach them.
type session struct {
	cfg  *Config
	dev  ibv.Device
	pd   ibv.PD
	cq   ibv.CQ
	qp   ibv.QP
	conn Conn

	recvBuf, sendBuf []byte // rping_rdma_info each
	rdmaBuf          []byte // the sink: READ into (server), WRITE into (client)
	startBuf         []byte // the client's source
	recvMR, sendMR   ibv.MR
	rdmaMR, startMR  ibv.MR
	bufs             []ibv.Buffer

	wcs [1]verbs.WC
}

// newSession creates the verbs objects, the QP in INIT, with one receive
// posted (rping posts it before connecting).
func newSession(cfg *Config, dev ibv.Device) (*session, error) {
	s := &session{cfg: cfg, dev: dev}
	var err error
	if s.pd, err = dev.AllocPD(); err != nil {
		return s, fmt.Errorf("ibv_alloc_pd failed: %w", err)
	}
	if s.cq, err = dev.CreateCQ(cqDepth); err != nil {
		return s, fmt.Errorf("ibv_create_cq failed: %w", err)
	}
	cp := verbs.QPCap{MaxSendWR: sqDepth, MaxRecvWR: rqDepth, MaxSendSGE: 1, MaxRecvSGE: 1}
	if s.qp, err = dev.CreateQP(s.pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: s.cq, RecvCQ: s.cq, Cap: cp}); err != nil {
		return s, fmt.Errorf("rdma_create_qp: %w", err)
	}
	// rdma_cm moves the QP to INIT with remote read and write allowed.
	if err := s.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.RemoteWrite | memory.RemoteRead},
		verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return s, fmt.Errorf("rdma_create_qp: %w", err)
	}
	s.debugf("created pd, cq, qp %#x\n", s.qp.QPN())
	remote := memory.LocalWrite | memory.RemoteRead | memory.RemoteWrite
	for _, b := range []struct {
		name   string
		n      int
		access memory.Access
		buf    *[]byte
		mr     *ibv.MR
	}{
		{"recv_buf", InfoLen, memory.LocalWrite, &s.recvBuf, &s.recvMR},
		{"send_buf", InfoLen, 0, &s.sendBuf, &s.sendMR},
		{"rdma_buf", cfg.Size, remote, &s.rdmaBuf, &s.rdmaMR},
		{"start_buf", cfg.Size, remote, &s.startBuf, &s.startMR},
	} {
		if b.name == "start_buf" && cfg.Server {
			continue
		}
		buf, err := dev.AllocBuffer(b.n)
		if err != nil {
			return s, fmt.Errorf("%s malloc failed: %w", b.name, err)
		}
		s.bufs = append(s.bufs, buf)
		*b.buf = buf.Bytes()[:b.n]
		if *b.mr, err = dev.RegMR(s.pd, *b.buf, b.access); err != nil {
			return s, fmt.Errorf("%s reg_mr failed: %w", b.name, err)
		}
	}
	s.debugf("allocated & registered buffers...\n")
	if err := s.postRecv(); err != nil {
		return s, fmt.Errorf("ibv_post_recv failed: %w", err)
	}
	return s, nil
}

// close destroys what newSession made (a nil field was never made).
func (s *session) close() {
	if s.qp != nil {
		s.qp.Destroy()
	}
	for _, mr := range []ibv.MR{s.recvMR, s.sendMR, s.rdmaMR, s.startMR} {
		if mr != nil {
			mr.Dereg()
		}
	}
	for _, b := range s.bufs {
		b.Close()
	}
	if s.cq != nil {
		s.cq.Destroy()
	}
	if s.pd != nil {
		s.pd.Dealloc()
	}
}

func (s *session) debugf(format string, args ...any) {
	if s.cfg.Debug {
		fmt.Fprintf(s.cfg.Out, format, args...)
	}
}

func (s *session) postRecv() error {
	return s.qp.PostRecv(&verbs.RecvWR{ID: recvWRID,
		SGL: []verbs.SGE{{Addr: s.recvMR.Addr(), Length: InfoLen, LKey: s.recvMR.LKey()}}})
}

// sendInfo SENDs the send buffer (rping's sq_wr).
func (s *session) sendInfo() error {
	return s.qp.PostSend(&verbs.SendWR{ID: sendWRID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: s.sendMR.Addr(), Length: InfoLen, LKey: s.sendMR.LKey()}}})
}

// rdma posts an RDMA READ or WRITE between the start of rdma_buf and the
// peer's advertised buffer (rping's rdma_sq_wr).
func (s *session) rdma(op verbs.WROpcode, n uint32, peer Info) error {
	return s.qp.PostSend(&verbs.SendWR{ID: rdmaWRID, Opcode: op, Flags: verbs.SendSignaled,
		SGL:        []verbs.SGE{{Addr: s.rdmaMR.Addr(), Length: n, LKey: s.rdmaMR.LKey()}},
		RemoteAddr: peer.Addr, RKey: peer.RKey})
}

// formatSend puts a buffer's advert into the send buffer
// (rping_format_send).
func (s *session) formatSend(buf []byte, mr ibv.MR) {
	i := Info{Addr: mr.Addr(), RKey: mr.RKey(), Size: uint32(s.cfg.Size)}
	i.Put(s.sendBuf)
	s.debugf("RDMA addr %x rkey %x len %d\n", i.Addr, i.RKey, i.Size)
}

// next waits for the next completion that moves rping along: a receive
// (already reposted, its info in recvBuf) or an RDMA READ or WRITE. SEND
// completions pass by, as in rping's handler. A failed completion is an
// error ("cq completion failed status N"); flushed WRs and the end of the
// connection are errDisconnected.
func (s *session) next(ctx context.Context) (verbs.WC, error) {
	for {
		if s.cq.Poll(s.wcs[:]) == 0 {
			if err := s.cq.ReqNotify(false); err != nil {
				return verbs.WC{}, err
			}
			// A completion that came before the arm fires nothing: poll
			// once more.
			if s.cq.Poll(s.wcs[:]) == 0 {
				select {
				case <-s.cq.Notify():
					continue
				case <-s.conn.Done():
					// The QP is in ERR; what completed before it still counts.
					if s.cq.Poll(s.wcs[:]) == 0 {
						return verbs.WC{}, errDisconnected
					}
				case <-ctx.Done():
					return verbs.WC{}, ctx.Err()
				}
			}
		}
		wc := s.wcs[0]
		if wc.Status != verbs.WCSuccess {
			if wc.Status == verbs.WCWRFlushErr {
				return wc, s.flushed(ctx)
			}
			fmt.Fprintf(s.cfg.Err, "cq completion failed status %d\n", wc.Status)
			return wc, fmt.Errorf("rping: %v completion failed: %v", wc.Opcode, wc.Status)
		}
		switch wc.Opcode {
		case verbs.WCSend:
			s.debugf("send completion\n")
			continue
		case verbs.WCRDMAWrite:
			s.debugf("rdma write completion\n")
		case verbs.WCRDMARead:
			s.debugf("rdma read completion\n")
		case verbs.WCRecv:
			s.debugf("recv completion\n")
			if wc.ByteLen != InfoLen {
				fmt.Fprintf(s.cfg.Err, "Received bogus data, size %d\n", wc.ByteLen)
				return wc, fmt.Errorf("%w, size %d", ErrBogus, wc.ByteLen)
			}
			if err := s.postRecv(); err != nil {
				return wc, fmt.Errorf("post recv error: %w", err)
			}
		default:
			s.debugf("unknown!!!!! completion\n")
			return wc, fmt.Errorf("rping: unexpected completion %v", wc.Opcode)
		}
		return wc, nil
	}
}

// flushed waits (briefly) for the disconnect a flushed WR announces.
func (s *session) flushed(ctx context.Context) error {
	t := time.NewTimer(flushWait)
	defer t.Stop()
	select {
	case <-s.conn.Done():
		return errDisconnected
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errors.New("rping: work requests flushed, but the connection did not end")
	}
}

// flushWait bounds the wait for the disconnect behind a flushed WR, and the
// client's wait for its DISCONNECTED event (the engine resets a stream
// whose peer does not close within 5 s).
const flushWait = 6 * time.Second

// expect checks that wc is the completion rping waits for in state want,
// printing rping's complaint otherwise.
func (s *session) expect(wc verbs.WC, err error, want int, role string) error {
	switch {
	case errors.Is(err, errDisconnected):
		fmt.Fprintf(s.cfg.Err, "%s DISCONNECT EVENT...\n", role)
		fmt.Fprintf(s.cfg.Err, "wait for %s state %d\n", stateNames[want], stateDisconnected)
		return errDisconnected
	case err != nil:
		fmt.Fprintf(s.cfg.Err, "wait for %s state %d\n", stateNames[want], stateError)
		return err
	}
	ok := false
	switch want {
	case stateRDMAReadAdv, stateRDMAWriteAdv, stateRDMAWriteComplete:
		ok = wc.Opcode == verbs.WCRecv
	case stateRDMAReadComplete:
		ok = wc.Opcode == verbs.WCRDMARead
	}
	if want == stateRDMAWriteComplete && s.cfg.Server {
		ok = wc.Opcode == verbs.WCRDMAWrite
	}
	if !ok {
		err := fmt.Errorf("rping: %v completion while waiting for %s", wc.Opcode, stateNames[want])
		fmt.Fprintf(s.cfg.Err, "wait for %s state %d\n", stateNames[want], stateError)
		return err
	}
	return nil
}
