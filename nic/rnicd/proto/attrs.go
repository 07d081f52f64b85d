// Encodings of the verbs attribute structs that cross the socket: device
// and port attributes, QP capabilities and attributes, address vectors.
// Every field is written, in declaration order, at a fixed width.

package proto

import (
	"github.com/rnic/rnic/nic/verbs"
)

// PutDeviceAttr writes a.
func PutDeviceAttr(w *Writer, a *verbs.DeviceAttr) {
	w.String(a.FwVer)
	w.U64(a.NodeGUID)
	w.U64(a.SysImageGUID)
	w.U64(a.MaxMRSize)
	w.U64(a.PageSizeCap)
	w.U32(a.VendorID)
	w.U32(a.VendorPartID)
	w.U32(a.HWVer)
	w.Int(a.MaxQP)
	w.Int(a.MaxQPWR)
	w.U32(uint32(a.DeviceCapFlags))
	for _, v := range []int{a.MaxSGE, a.MaxSGERd, a.MaxCQ, a.MaxCQE, a.MaxMR, a.MaxPD, a.MaxQPRdAtom,
		a.MaxResRdAtom, a.MaxQPInitRdAtom} {
		w.Int(v)
	}
	w.U8(uint8(a.AtomicCap))
	for _, v := range []int{a.MaxMW, a.MaxAH, a.MaxSRQ, a.MaxSRQWR, a.MaxSRQSGE, a.MaxPKeys} {
		w.Int(v)
	}
	w.U8(a.LocalCAAckDelay)
	w.U8(a.PhysPortCnt)
	w.Int(a.MaxInlineData)
	w.U64(a.MaxMsgSize)
	w.U64(uint64(a.DeviceCapFlagsEx))
	w.Int(a.MaxMcastGrp)
	w.Int(a.MaxMcastQPAttach)
	w.Int(a.MaxTotalMcastQPAttach)
}

// GetDeviceAttr reads what PutDeviceAttr wrote.
func GetDeviceAttr(r *Reader, a *verbs.DeviceAttr) {
	a.FwVer = r.String(MaxName)
	a.NodeGUID = r.U64()
	a.SysImageGUID = r.U64()
	a.MaxMRSize = r.U64()
	a.PageSizeCap = r.U64()
	a.VendorID = r.U32()
	a.VendorPartID = r.U32()
	a.HWVer = r.U32()
	a.MaxQP = r.Int()
	a.MaxQPWR = r.Int()
	a.DeviceCapFlags = verbs.DeviceCap(r.U32())
	for _, p := range []*int{&a.MaxSGE, &a.MaxSGERd, &a.MaxCQ, &a.MaxCQE, &a.MaxMR, &a.MaxPD, &a.MaxQPRdAtom,
		&a.MaxResRdAtom, &a.MaxQPInitRdAtom} {
		*p = r.Int()
	}
	a.AtomicCap = verbs.AtomicCap(r.U8())
	for _, p := range []*int{&a.MaxMW, &a.MaxAH, &a.MaxSRQ, &a.MaxSRQWR, &a.MaxSRQSGE, &a.MaxPKeys} {
		*p = r.Int()
	}
	a.LocalCAAckDelay = r.U8()
	a.PhysPortCnt = r.U8()
	a.MaxInlineData = r.Int()
	a.MaxMsgSize = r.U64()
	a.DeviceCapFlagsEx = verbs.DeviceCapEx(r.U64())
	a.MaxMcastGrp = r.Int()
	a.MaxMcastQPAttach = r.Int()
	a.MaxTotalMcastQPAttach = r.Int()
}

// PutPortAttr writes a.
func PutPortAttr(w *Writer, a *verbs.PortAttr) {
	w.U8(uint8(a.State))
	w.U8(uint8(a.MaxMTU))
	w.U8(uint8(a.ActiveMTU))
	w.Int(a.GIDTblLen)
	w.U64(a.MaxMsgSize)
	w.Int(a.PKeyTblLen)
	w.U8(a.PhysState)
	w.U8(uint8(a.LinkLayer))
	w.Int(a.LinkMTU)
	w.U32(a.BadPKeyCntr)
	w.U32(a.QKeyViolCntr)
}

// GetPortAttr reads what PutPortAttr wrote.
func GetPortAttr(r *Reader, a *verbs.PortAttr) {
	a.State = verbs.PortState(r.U8())
	a.MaxMTU = verbs.MTU(r.U8())
	a.ActiveMTU = verbs.MTU(r.U8())
	a.GIDTblLen = r.Int()
	a.MaxMsgSize = r.U64()
	a.PKeyTblLen = r.Int()
	a.PhysState = r.U8()
	a.LinkLayer = verbs.LinkLayer(r.U8())
	a.LinkMTU = r.Int()
	a.BadPKeyCntr = r.U32()
	a.QKeyViolCntr = r.U32()
}

// PutQPCap writes c.
func PutQPCap(w *Writer, c *verbs.QPCap) {
	w.U32(c.MaxSendWR)
	w.U32(c.MaxRecvWR)
	w.U32(c.MaxSendSGE)
	w.U32(c.MaxRecvSGE)
	w.U32(c.MaxInlineData)
}

// GetQPCap reads what PutQPCap wrote.
func GetQPCap(r *Reader, c *verbs.QPCap) {
	c.MaxSendWR = r.U32()
	c.MaxRecvWR = r.U32()
	c.MaxSendSGE = r.U32()
	c.MaxRecvSGE = r.U32()
	c.MaxInlineData = r.U32()
}

// PutAV writes av.
func PutAV(w *Writer, av *verbs.AddressVector) {
	w.Addr(av.DGID)
	w.U8(av.SGIDIndex)
	w.U32(av.FlowLabel)
	w.U8(av.HopLimit)
	w.U8(av.TrafficClass)
	w.U8(av.SL)
	w.U8(av.PortNum)
	w.Raw(av.DMAC[:])
	w.U16(av.SrcPort)
}

// GetAV reads what PutAV wrote.
func GetAV(r *Reader, av *verbs.AddressVector) {
	av.DGID = r.Addr()
	av.SGIDIndex = r.U8()
	av.FlowLabel = r.U32()
	av.HopLimit = r.U8()
	av.TrafficClass = r.U8()
	av.SL = r.U8()
	av.PortNum = r.U8()
	if b := r.take(6); b != nil {
		av.DMAC = [6]byte(b)
	}
	av.SrcPort = r.U16()
}

// PutQPAttr writes a.
func PutQPAttr(w *Writer, a *verbs.QPAttr) {
	w.U8(uint8(a.State))
	w.U8(uint8(a.CurState))
	w.U8(uint8(a.PathMTU))
	w.U32(a.QKey)
	w.U32(a.RQPSN)
	w.U32(a.SQPSN)
	w.U32(a.DestQPN)
	w.U32(uint32(a.AccessFlags))
	PutQPCap(w, &a.Cap)
	PutAV(w, &a.AV)
	w.U16(a.PKeyIndex)
	w.Bool(a.SQDrainNotify)
	w.U8(a.MaxRdAtomic)
	w.U8(a.MaxDestRdAtomic)
	w.U8(a.MinRNRTimer)
	w.U8(a.PortNum)
	w.U8(a.Timeout)
	w.U8(a.RetryCnt)
	w.U8(a.RNRRetry)
	w.U8(uint8(a.PathMigState))
}

// GetQPAttr reads what PutQPAttr wrote.
func GetQPAttr(r *Reader, a *verbs.QPAttr) {
	a.State = verbs.QPState(r.U8())
	a.CurState = verbs.QPState(r.U8())
	a.PathMTU = verbs.MTU(r.U8())
	a.QKey = r.U32()
	a.RQPSN = r.U32()
	a.SQPSN = r.U32()
	a.DestQPN = r.U32()
	a.AccessFlags = verbs.Access(r.U32())
	GetQPCap(r, &a.Cap)
	GetAV(r, &a.AV)
	a.PKeyIndex = r.U16()
	a.SQDrainNotify = r.Bool()
	a.MaxRdAtomic = r.U8()
	a.MaxDestRdAtomic = r.U8()
	a.MinRNRTimer = r.U8()
	a.PortNum = r.U8()
	a.Timeout = r.U8()
	a.RetryCnt = r.U8()
	a.RNRRetry = r.U8()
	a.PathMigState = verbs.MigState(r.U8())
}
