// The server side: rping_run_server and rping_test_server.

package rping

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rnic/rnic/nic/verbs"
)

// serve accepts one connection on addr and answers pings until the client
// disconnects. Like rping's server it ignores Count.
func serve(ctx context.Context, cfg *Config, cn Connector, addr netip.AddrPort, ready func(netip.AddrPort)) error {
	l, err := cn.Listen(addr)
	if err != nil {
		return fmt.Errorf("rdma_bind_addr: %w", err)
	}
	defer l.Close()
	if ready != nil {
		ready(l.Addr())
	}
	req, err := l.Accept(ctx)
	if err != nil {
		return err
	}
	l.Close() // rping serves one connection
	s, err := newSession(cfg, cn.Device())
	defer s.close()
	if err != nil {
		req.Reject()
		return fmt.Errorf("setup_qp failed: %w", err)
	}
	s.debugf("accepting client connection request\n")
	if s.conn, err = req.Accept(ctx, s.qp, rpingConnParam); err != nil {
		return fmt.Errorf("connect error: %w", err)
	}
	err = s.serveLoop(ctx)
	s.conn.Disconnect()
	if errors.Is(err, errDisconnected) {
		return nil // rping_test_server: the client's disconnect ends it well
	}
	return fmt.Errorf("rping server failed: %w", err)
}

// serveLoop is rping_test_server; it returns when the connection ends
// (errDisconnected) or fails.
func (s *session) serveLoop(ctx context.Context) error {
	const role = "server"
	for {
		// Wait for the client's source advert.
		wc, err := s.next(ctx)
		if err := s.expect(wc, err, stateRDMAReadAdv, role); err != nil {
			return err
		}
		src, err := ParseInfo(s.recvBuf[:wc.ByteLen])
		if err != nil {
			return err
		}
		s.debugf("Received rkey %x addr %x len %d from peer\n", src.RKey, src.Addr, src.Size)
		s.debugf("server received sink adv\n")
		if err := s.rdma(verbs.WRRDMARead, src.Size, src); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		s.debugf("server posted rdma read req \n")
		wc, err = s.next(ctx)
		if err := s.expect(wc, err, stateRDMAReadComplete, role); err != nil {
			return err
		}
		s.debugf("server received read complete\n")
		if s.cfg.Verbose {
			fmt.Fprintf(s.cfg.Out, "server ping data: %s\n", cString(s.rdmaBuf))
		}
		// The "go ahead": rping's server never fills its send buffer.
		if err := s.sendInfo(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		s.debugf("server posted go ahead\n")

		// Wait for the client's sink advert.
		wc, err = s.next(ctx)
		if err := s.expect(wc, err, stateRDMAWriteAdv, role); err != nil {
			return err
		}
		sink, err := ParseInfo(s.recvBuf[:wc.ByteLen])
		if err != nil {
			return err
		}
		s.debugf("Received rkey %x addr %x len %d from peer\n", sink.RKey, sink.Addr, sink.Size)
		s.debugf("server received sink adv\n")
		// rping writes strlen(rdma_buf) + 1 bytes: the string and its NUL.
		n := min(len(cString(s.rdmaBuf))+1, len(s.rdmaBuf))
		s.debugf("rdma write from lkey %x laddr %x len %d\n", s.rdmaMR.LKey(), s.rdmaMR.Addr(), n)
		if err := s.rdma(verbs.WRRDMAWrite, uint32(n), sink); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		wc, err = s.next(ctx)
		if err := s.expect(wc, err, stateRDMAWriteComplete, role); err != nil {
			return err
		}
		s.debugf("server rdma write complete \n")
		if err := s.sendInfo(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		s.debugf("server posted go ahead\n")
	}
}
