// Run: one side of an ibv_rc_pingpong exchange, step by step as the real
// tool does it (pp_init_ctx, pp_post_recv, the address exchange,
// pp_connect_ctx, the completion loop, the report).

package pingpong

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rnic/rnic/nic/ibv"
)

// Work request IDs, as rc_pingpong's: they double as the bits of the
// pending mask, so a completion clears its own bit.
const (
	recvWRID = 1
	sendWRID = 2
)

// Result is what one side measured.
type Result struct {
	Local, Remote Dest
	Size, Iters   int
	// Elapsed is the time from the first post to the last completion,
	// truncated to microseconds as gettimeofday measures it.
	Elapsed time.Duration
	// CQEvents is the number of completion events waited for (-e).
	CQEvents int
	// InvalidPages lists the pages (of PageSize bytes) of the buffer whose
	// content differed from what the client sent, with Check.
	InvalidPages []int
}

// PageSize is the unit InvalidPages counts in, rc_pingpong's page_size on
// the usual Linux system.
const PageSize = 4096

// ErrInvalidData is returned when Check found received data that differs
// from what was sent.
var ErrInvalidData = errors.New("pingpong: received data differs from what was sent")

// Run runs one side of a ping-pong as cfg describes and writes
// rc_pingpong's (with UD ud_pingpong's) lines to cfg.Out: the local and remote addresses, then the
// two result lines. A completion with an error status ends the run with a
// *CompletionError. Cancelling ctx aborts the run.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	r, err := cfg.resolve(ctx)
	if err != nil {
		return nil, err
	}
	p, err := newPeer(ctx, r)
	if err != nil {
		return nil, err
	}
	defer p.close()
	if err := p.postRecv(r.RxDepth); err != nil {
		return nil, err
	}
	if r.Events {
		if err := p.cq.ReqNotify(false); err != nil {
			return nil, fmt.Errorf("pingpong: couldn't request CQ notification: %w", err)
		}
	}
	res := &Result{Size: r.Size, Iters: r.Iters}
	if res.Local, err = p.localDest(); err != nil {
		return nil, err
	}
	me := describe(res.Local)
	if r.UD {
		// ud_pingpong's own line has a colon before the GID here.
		me = strings.Replace(me, ", GID ", ": GID ", 1)
	}
	fmt.Fprintf(r.Out, "  local address:  %s\n", me)

	conn, err := sideChannel(ctx, r, ibv.NetworkOf(p.dev))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer context.AfterFunc(ctx, func() { conn.Close() })()
	local, peer := localIP(conn), peerIP(conn)
	connect := func(remote Dest) error { return p.connect(remote, local, peer) }
	if r.Server != "" {
		res.Remote, err = ClientExchange(conn, res.Local, connect)
	} else {
		res.Remote, err = ServerExchange(conn, res.Local, connect)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	fmt.Fprintf(r.Out, "  remote address: %s\n", describe(res.Remote))

	if err := p.pingpong(ctx, res); err != nil {
		return nil, err
	}
	linger(conn)
	writeReport(r.Out, res)
	if len(res.InvalidPages) > 0 {
		return res, fmt.Errorf("%w: %d pages", ErrInvalidData, len(res.InvalidPages))
	}
	return res, nil
}

// describe formats an address as rc_pingpong prints it (after "local
// address:  " or "remote address: ").
func describe(d Dest) string {
	return fmt.Sprintf("LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", d.LID, d.QPN, d.PSN, d.GIDAddr())
}
