package scenario

import (
	"errors"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/verbs"
)

// iwarpPort is where rnic1 listens for the scenario's connection.
const iwarpPort = 18515

// iwarpPair creates an RC QP on each iWARP NIC and connects rnic0's to
// rnic1's through the connection manager: MPA Request, MPA Reply, RTR.
func (s *stage) iwarpPair() (*end, *end, error) {
	var ends [2]*end
	for i, n := range s.nodes {
		cq, err := n.dev.CreateCQ(64)
		if err != nil {
			return nil, nil, err
		}
		qp, err := n.dev.CreateQP(n.pd, nic.QPInit{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			return nil, nil, err
		}
		all := memory.RemoteWrite | memory.RemoteRead | memory.RemoteAtomic
		if err := qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: all},
			verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
			return nil, nil, err
		}
		ends[i] = &end{s: s, n: n, qp: qp, cq: cq}
	}
	a, b := ends[0], ends[1]
	l, addr, err := b.n.iw.ListenFunc(iwarpPort, func(r embedded.MPARequest) {
		if err := r.Accept(b.qp.QPN(), []byte("rnic1 accepts"), 4, 4); err != nil {
			r.Reject(nil)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	defer l.Close()
	var res error
	done := false
	s.say("rnic0 qp %#06x connects to %v", a.qp.QPN(), addr)
	if err := a.n.iw.ConnectFunc(a.qp.QPN(), addr, []byte("rnic0 connects"), 4, 4, func(err error) { res, done = err, true }); err != nil {
		return nil, nil, err
	}
	s.clk.Run(func() bool { return done })
	switch {
	case !done:
		return nil, nil, errors.New("connection setup never finished")
	case res != nil:
		return nil, nil, res
	}
	s.say("connected: rnic0 qp %#06x is in %s, rnic1 qp %#06x in %s", a.qp.QPN(), a.qp.State(), b.qp.QPN(), b.qp.State())
	return a, b, nil
}
