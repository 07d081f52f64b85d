// The device's limits a test must fit: checked before anything is
// allocated, so that a test too large for the device is a configuration
// error naming the flag, not a failure deep inside (or a panic).

package perf

import (
	"fmt"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/verbs"
)

// devLimits are the device attributes (ibv_query_device) a test uses.
type devLimits struct {
	name    string
	maxQP   int
	maxQPWR int
	maxCQE  int
	maxMsg  uint64
}

// limitsOf reads them from a device's attributes.
func limitsOf(name string, a verbs.DeviceAttr) devLimits {
	return devLimits{name: name, maxQP: a.MaxQP, maxQPWR: a.MaxQPWR, maxCQE: a.MaxCQE, maxMsg: a.MaxMsgSize}
}

// localLimits are those of a NIC this process builds (nic's defaults).
func localLimits() devLimits {
	l := nic.DefaultLimits()
	return devLimits{name: "the rnic NIC", maxQP: l.MaxQP, maxQPWR: l.MaxQPWR, maxCQE: l.MaxCQE, maxMsg: verbs.MaxMsgSize}
}

// recvDepth is the receives a QP of the test keeps posted: SEND tests
// RxDepth, the others none (one slot keeps the QP's receive queue valid).
func (c *Config) recvDepth() int {
	if c.Op == OpSend {
		return c.RxDepth
	}
	return 1
}

// sendCQE and recvCQE are the sizes of a side's completion queues.
func (c *Config) sendCQE() int { return c.QPs*c.TxDepth + 1 }
func (c *Config) recvCQE() int { return c.QPs*c.recvDepth() + 1 }

// checkLimits refuses a test the device cannot hold, naming perftest's
// flags and the largest value that would fit.
func (c *Config) checkLimits(l devLimits) error {
	switch {
	case uint64(c.Size) > l.maxMsg:
		return fmt.Errorf("%w: -s/--size %d: %s carries messages of 1..%d bytes (max_msg_sz)", ErrConfig, c.Size, l.name, l.maxMsg)
	case c.QPs > l.maxQP:
		return fmt.Errorf("%w: -q/--qps %d: %s has at most %d QPs (max_qp)", ErrConfig, c.QPs, l.name, l.maxQP)
	case c.TxDepth > l.maxQPWR:
		return fmt.Errorf("%w: -t/--tx-depth %d: %s allows 1..%d WRs per queue (max_qp_wr)", ErrConfig, c.TxDepth, l.name, l.maxQPWR)
	case c.recvDepth() > l.maxQPWR:
		return fmt.Errorf("%w: -r/--rx-depth %d: %s allows 1..%d WRs per queue (max_qp_wr)", ErrConfig, c.RxDepth, l.name, l.maxQPWR)
	case c.sendCQE() > l.maxCQE:
		return fmt.Errorf("%w: -q/--qps %d × -t/--tx-depth %d needs a send CQ of %d entries, %s allows %d (max_cqe): "+
			"at most %d QPs at this depth", ErrConfig, c.QPs, c.TxDepth, c.sendCQE(), l.name, l.maxCQE, (l.maxCQE-1)/c.TxDepth)
	case c.recvCQE() > l.maxCQE:
		return fmt.Errorf("%w: -q/--qps %d × -r/--rx-depth %d needs a receive CQ of %d entries, %s allows %d (max_cqe): "+
			"at most %d QPs at this depth", ErrConfig, c.QPs, c.RxDepth, c.recvCQE(), l.name, l.maxCQE, (l.maxCQE-1)/c.recvDepth())
	}
	return nil
}

// fitOutReads is a side's outReads for qps QPs on a device with attributes
// a: maxOutReads, within the device's max_qp_rd_atom and its
// max_res_rd_atom shared by all QPs (rxe's 0x3f000 holds 2016 QPs at 128),
// and at least 1. A device that reports no limit is taken at its word.
func fitOutReads(a verbs.DeviceAttr, qps int) int {
	n := maxOutReads
	if a.MaxQPRdAtom > 0 {
		n = min(n, a.MaxQPRdAtom)
	}
	if a.MaxResRdAtom > 0 {
		n = min(n, a.MaxResRdAtom/max(qps, 1))
	}
	return max(n, 1)
}
