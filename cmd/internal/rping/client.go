// The client side: rping_run_client and rping_test_client.

package rping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// ErrMismatch: -V found the data written back differs from the ping
// (rping's "data mismatch!").
var ErrMismatch = errors.New("rping: data mismatch")

// ping connects to remote and runs Count pings (forever if 0).
func ping(ctx context.Context, cfg *Config, cn Connector, remote netip.AddrPort) error {
	s, err := newSession(cfg, cn.Device())
	defer s.close()
	if err != nil {
		return fmt.Errorf("setup_qp failed: %w", err)
	}
	wait := noticeAfter(cfg.Err, waitNoticeAfter, fmt.Sprintf(
		"rping: waiting for %v to answer the connection request (%s); Ctrl-C gives up", remote, cfg.connectRetries()))
	s.conn, err = cn.Connect(ctx, s.qp, remote, rpingConnParam)
	wait.stop()
	if err != nil {
		return err
	}
	s.debugf("rdma_connect successful\n")
	err = s.pingLoop(ctx)
	if errors.Is(err, errDisconnected) {
		return nil // the server went away: rping_test_client's DISCONNECTED
	}
	if err != nil {
		s.conn.Disconnect()
		return fmt.Errorf("rping client failed: %w", err)
	}
	// rping_disconnect; the DISCONNECTED event follows when the server has
	// closed its side too.
	if err := s.conn.Disconnect(); err != nil {
		return fmt.Errorf("rdma_disconnect: %w", err)
	}
	t := time.NewTimer(flushWait)
	defer t.Stop()
	select {
	case <-s.conn.Done():
		fmt.Fprintf(cfg.Err, "client DISCONNECT EVENT...\n")
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// pingLoop is rping_test_client.
func (s *session) pingLoop(ctx context.Context) error {
	const role = "client"
	for n := 0; s.cfg.Count == 0 || n < s.cfg.Count; n++ {
		if s.cfg.fill != nil {
			s.cfg.fill(s.startBuf, n)
		} else {
			FillPing(s.startBuf, n)
		}
		s.formatSend(s.startBuf, s.startMR)
		if err := s.sendInfo(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		// The server READs the ping, then says go ahead.
		wc, err := s.next(ctx)
		if err := s.expect(wc, err, stateRDMAWriteAdv, role); err != nil {
			return err
		}
		s.formatSend(s.rdmaBuf, s.rdmaMR)
		if err := s.sendInfo(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		// The server WRITEs it back, then says go ahead.
		wc, err = s.next(ctx)
		if err := s.expect(wc, err, stateRDMAWriteComplete, role); err != nil {
			return err
		}
		if s.cfg.Validate && !bytes.Equal(s.startBuf, s.rdmaBuf) {
			fmt.Fprintln(s.cfg.Err, "data mismatch!")
			return ErrMismatch
		}
		if s.cfg.Verbose {
			fmt.Fprintf(s.cfg.Out, "ping data: %s\n", cString(s.rdmaBuf))
		}
	}
	return nil
}
