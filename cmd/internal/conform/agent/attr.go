package agent

import (
	"fmt"
	"net"

	"github.com/rnic/rnic/cmd/internal/conform/agentproto"
	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic/verbs"
)

// fromWire turns modify_qp's attributes into verbs ones and their mask:
// every field present is in the mask.
func fromWire(w *agentproto.QPAttr) (verbs.QPAttr, verbs.QPAttrMask, error) {
	var a verbs.QPAttr
	var m verbs.QPAttrMask
	set8 := func(p *uint8, dst *uint8, bit verbs.QPAttrMask) {
		if p != nil {
			*dst, m = *p, m|bit
		}
	}
	if w.State != nil {
		a.State, m = verbs.QPState(*w.State), m|verbs.AttrState
	}
	if w.PathMTU != nil {
		a.PathMTU, m = verbs.MTUFromBytes(*w.PathMTU), m|verbs.AttrPathMTU
		if a.PathMTU == 0 {
			return a, 0, fmt.Errorf("path_mtu %d is not 256, 512, 1024, 2048 or 4096", *w.PathMTU)
		}
	}
	set32 := func(p *uint32, dst *uint32, bit verbs.QPAttrMask) {
		if p != nil {
			*dst, m = *p, m|bit
		}
	}
	set32(w.QKey, &a.QKey, verbs.AttrQKey)
	set32(w.RQPSN, &a.RQPSN, verbs.AttrRQPSN)
	set32(w.SQPSN, &a.SQPSN, verbs.AttrSQPSN)
	set32(w.DestQPN, &a.DestQPN, verbs.AttrDestQPN)
	if w.Access != nil {
		a.AccessFlags, m = memory.Access(*w.Access), m|verbs.AttrAccessFlags
	}
	if w.AV != nil {
		av, err := avFromWire(w.AV)
		if err != nil {
			return a, 0, err
		}
		a.AV, m = av, m|verbs.AttrAV
	}
	if w.PKeyIndex != nil {
		a.PKeyIndex, m = *w.PKeyIndex, m|verbs.AttrPKeyIndex
	}
	set8(w.Port, &a.PortNum, verbs.AttrPort)
	set8(w.Timeout, &a.Timeout, verbs.AttrTimeout)
	set8(w.RetryCnt, &a.RetryCnt, verbs.AttrRetryCnt)
	set8(w.RNRRetry, &a.RNRRetry, verbs.AttrRNRRetry)
	set8(w.MinRNRTimer, &a.MinRNRTimer, verbs.AttrMinRNRTimer)
	set8(w.MaxRdAtomic, &a.MaxRdAtomic, verbs.AttrMaxQPRdAtomic)
	set8(w.MaxDestRdAtomic, &a.MaxDestRdAtomic, verbs.AttrMaxDestRdAtomic)
	return a, m, nil
}

// toWire is query_qp's answer: every field.
func toWire(a *verbs.QPAttr) agentproto.QPAttr {
	st, mtu, acc := uint8(a.State), a.PathMTU.Bytes(), uint32(a.AccessFlags)
	av := &agentproto.AV{DGID: a.AV.DGID.String(), SGIDIndex: a.AV.SGIDIndex, FlowLabel: a.AV.FlowLabel,
		HopLimit: a.AV.HopLimit, TrafficClass: a.AV.TrafficClass, SL: a.AV.SL, SrcPort: a.AV.SrcPort,
		DMAC: net.HardwareAddr(a.AV.DMAC[:]).String()}
	return agentproto.QPAttr{State: &st, PathMTU: &mtu, QKey: &a.QKey, RQPSN: &a.RQPSN, SQPSN: &a.SQPSN,
		DestQPN: &a.DestQPN, Access: &acc, AV: av, PKeyIndex: &a.PKeyIndex, Port: &a.PortNum,
		Timeout: &a.Timeout, RetryCnt: &a.RetryCnt, RNRRetry: &a.RNRRetry, MinRNRTimer: &a.MinRNRTimer,
		MaxRdAtomic: &a.MaxRdAtomic, MaxDestRdAtomic: &a.MaxDestRdAtomic}
}

func parseMAC(s string) ([6]byte, error) {
	var mac [6]byte
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return mac, fmt.Errorf("%w %q", errBadMAC, s)
	}
	copy(mac[:], hw)
	return mac, nil
}
