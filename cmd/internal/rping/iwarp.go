// The iWARP Connector: an iWARP NIC of this process (embedded.OpenIWARP:
// the engine on kernel TCP in the embedded mode, on a TAP-mode NIC's own
// TCP in the TAP mode) and its connection manager, the role Linux iw_cm
// plays under rdma_cm (cm.go connects through it as through any rdma_cm).
// What goes on the wire is what rping over siw sends
// (testdata/captures/siw-rping.pcap): TCP, then the MPA Request/Reply of
// RFC 5044 / RFC 6581, revision 2 with the enhanced flag, IRD 1 and ORD 1
// as the only private data, no peer-to-peer RTR offered (siw's peer_to_peer
// is off) and, unless asked, no CRC (siw's mpa_crc_required is off; a peer
// that asks gets CRCs anyway). A disconnect is TCP's FIN, as siw closes an
// RTS QP.

package rping

import (
	"fmt"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
)

// DefaultSettle is how long an iWARP Connect waits after the MPA Reply
// before it returns (embedded.IWARPConfig.Settle), so the first SEND does
// not follow the Reply at once. Linux siw, on the passive side, finishes
// moving its QP to RTS after it has sent the Reply; an FPDU that arrives
// in between can sit in its socket unprocessed until more data comes, and
// rping's server then waits forever for the client's first SEND (seen in
// the lab under load, about one run in five; a Linux rping client,
// slower, sends ~6 ms after the Reply, and perftest waits a second).
const DefaultSettle = embedded.DefaultSettle

// NewIWARP opens an iWARP NIC as cfg describes, offering no RTR as siw's
// initiator does (as responder it takes what the engine accepts) and
// settling its connects for DefaultSettle unless cfg says otherwise, and
// the Connector on its rdma_cm.
// Close closes the NIC.
func NewIWARP(cfg embedded.IWARPConfig) (*CM, error) {
	cfg.RTR = embedded.RTRNone
	if cfg.Settle == 0 {
		cfg.Settle = DefaultSettle
	}
	n, err := embedded.OpenIWARP(cfg)
	if err != nil {
		return nil, fmt.Errorf("rping: %w", err)
	}
	c, err := NewCM(n.Verbs(nic.IBVOptions{}))
	if err != nil {
		n.Close()
		return nil, err
	}
	c.closeDev = n.Close
	return c, nil
}
