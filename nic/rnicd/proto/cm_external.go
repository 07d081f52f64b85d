// rdma_cm with an external QP (ibv.ExternalConnManager): the program's
// own RC QP, named by its QP number (a QP of the client's), connected
// through an id without a QP. The CM never moves it; CM_INIT_QP_ATTR gives the
// attributes rdma_init_qp_attr hands out for RTR and RTS.
//
//	CM_CONNECT_EXT async request CMConnectReq   reply Empty  result CMConnInfo
//	CM_ACCEPT_EXT  async request CMAcceptReq    reply Empty  result CMConnInfo
//	CM_ESTABLISH         request Handle         reply Empty
//	CM_INIT_QP_ATTR           request Handle         reply CMQPAttr
//
// The request bodies are CM_CONNECT's and CM_ACCEPT's with the QP's
// number in their QP field. CM_CONNECT_EXT's result comes at the REP
// (RDMA_CM_EVENT_CONNECT_RESPONSE): its Conn is the pending connection,
// which CM_ESTABLISH completes (the RTU goes; from then on it is an
// ordinary connection, CM_DISCONNECT and CM_DISCONNECTED as any).
// CM_INIT_QP_ATTR takes that pending connection, or a request not yet
// answered (its attributes fix the PSN the REP of CM_ACCEPT_EXT carries).

package proto

import (
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
)

// External-QP rdma_cm ops.
const (
	OpCMConnectExt Op = 0x0058
	OpCMAcceptExt  Op = 0x0059
	OpCMEstablish  Op = 0x005a
	OpCMInitQPAttr Op = 0x005b
)

func init() {
	registerOps([]opDecl{
		{OpCMConnectExt, "CM_CONNECT_EXT", Bodies{func() Message { return new(CMConnectReq) }, func() Message { return new(Empty) }}},
		{OpCMAcceptExt, "CM_ACCEPT_EXT", Bodies{func() Message { return new(CMAcceptReq) }, func() Message { return new(Empty) }}},
		{OpCMEstablish, "CM_ESTABLISH", Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }}},
		{OpCMInitQPAttr, "CM_INIT_QP_ATTR", Bodies{func() Message { return new(Handle) }, func() Message { return new(CMQPAttr) }}},
	})
}

// CMQPAttr are an external QP's RTR and RTS attributes.
type CMQPAttr struct{ A ibv.ExternalQPAttrs }

func (m *CMQPAttr) Encode(w *Writer) {
	a := &m.A
	PutAV(w, &a.AV)
	w.U8(uint8(a.PathMTU))
	w.U32(a.DestQPN)
	w.U32(a.RQPSN)
	w.U32(a.SQPSN)
	w.U8(a.MaxDestRdAtomic)
	w.U8(a.MaxRdAtomic)
	w.U8(a.MinRNRTimer)
	w.U8(a.Timeout)
	w.U8(a.RetryCnt)
	w.U8(a.RNRRetry)
}

func (m *CMQPAttr) Decode(r *Reader) {
	a := &m.A
	GetAV(r, &a.AV)
	a.PathMTU = verbs.MTU(r.U8())
	a.DestQPN = r.U32()
	a.RQPSN = r.U32()
	a.SQPSN = r.U32()
	a.MaxDestRdAtomic = r.U8()
	a.MaxRdAtomic = r.U8()
	a.MinRNRTimer = r.U8()
	a.Timeout = r.U8()
	a.RetryCnt = r.U8()
	a.RNRRetry = r.U8()
}
