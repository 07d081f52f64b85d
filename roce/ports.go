// The UDP source ports a QP sends from, held on the link for as long as the
// QP lives (transport.SourcePorts): the embedded mode's link keeps a kernel
// socket per source port and closes it when the last QP using the port is
// destroyed.

package roce

import "slices"

// holdPort records that qp sends from port and holds it on the link, once
// per QP and port. qp.Mu is held (or qp is not yet shared).
func (qp *QP) holdPort(port uint16) {
	sp := qp.s.cfg.SourcePorts
	if sp == nil || qp.destroyed || slices.Contains(qp.ports, port) {
		return
	}
	qp.ports = append(qp.ports, port)
	sp.HoldSourcePort(port)
}

// releasePorts releases every port qp held; called once, by Destroy.
func (qp *QP) releasePorts() {
	qp.Mu.Lock()
	ports := qp.ports
	qp.ports = nil
	qp.Mu.Unlock()
	for _, p := range ports {
		qp.s.cfg.SourcePorts.ReleaseSourcePort(p)
	}
}
