package mad

import "encoding/binary"

// Service ID Resolution (IBTA Vol 1 §12.11): a UD client asks a
// ServiceID's owner for the QPN and Q_Key to send to. The messages'
// layouts (Tables 119 and 120; Linux's ibta_vol1_c12.h agrees), offsets
// from the start of the class data:
//
//	SIDR_REQ  0 RequestID | 4 P_Key(16) | 6 rsvd | 8 ServiceID(64) | 16 PrivateData(216)
//	SIDR_REP  0 RequestID | 4 Status | 5 AddInfoLen | 6 VendorID_H(16)
//	          8 QPN(24) VendorID_L(8) | 12 ServiceID(64) | 20 Q_Key
//	         24 AdditionalInfo(72) | 96 PrivateData(136)
//
// rdma_cm carries its 36-byte header (CMAHeader) in SIDR_REQ's private
// data, as in REQ's.

// SIDR private data and additional information sizes (§12.11).
const (
	SIDRREQPrivateDataLen = 216
	SIDRREPPrivateDataLen = 136
	SIDRREPInfoLen        = 72
)

// SIDRStatus is a SIDR_REP's status (§12.11.2, Table 120).
type SIDRStatus uint8

// The SIDR_REP statuses; rdma_cm reports any but SIDRValid as
// RDMA_CM_EVENT_UNREACHABLE.
const (
	SIDRValid              SIDRStatus = 0 // QPN and Q_Key are valid
	SIDRUnsupported        SIDRStatus = 1 // no listener for the ServiceID
	SIDRRejected           SIDRStatus = 2 // the consumer rejected the request
	SIDRNoQP               SIDRStatus = 3
	SIDRRedirect           SIDRStatus = 4 // AdditionalInfo holds a ClassPortInfo
	SIDRUnsupportedVersion SIDRStatus = 5 // rdma_cm header version not understood
)

func (s SIDRStatus) String() string {
	switch s {
	case SIDRValid:
		return "valid"
	case SIDRUnsupported:
		return "service ID not supported"
	case SIDRRejected:
		return "rejected"
	case SIDRNoQP:
		return "no QP"
	case SIDRRedirect:
		return "redirect"
	case SIDRUnsupportedVersion:
		return "unsupported version"
	}
	return "status " + itoa(int(s))
}

// SIDRREQ is a ServiceIDResolutionRequest (§12.11.1).
type SIDRREQ struct {
	RequestID uint32
	PKey      uint16
	ServiceID uint64
	// PrivateData is up to SIDRREQPrivateDataLen bytes; decoding returns
	// all 216 (a view into the MAD).
	PrivateData []byte
}

// SIDRREP is a ServiceIDResolutionResponse (§12.11.2).
type SIDRREP struct {
	RequestID uint32
	Status    SIDRStatus
	QPN       uint32
	ServiceID uint64
	QKey      uint32
	// Info is the additional information, AdditionalInfoLen bytes (at
	// most 72): a ClassPortInfo when Status is SIDRRedirect.
	Info        []byte
	PrivateData []byte
}

// Encode writes the SIDR_REQ into m (MADLen bytes) with transaction ID tid.
func (r *SIDRREQ) Encode(m MAD, tid uint64) error {
	m.setHeader(AttrSIDRREQ, tid)
	d := m.Data()
	clear(d)
	binary.BigEndian.PutUint32(d[0:], r.RequestID)
	binary.BigEndian.PutUint16(d[4:], r.PKey)
	binary.BigEndian.PutUint64(d[8:], r.ServiceID)
	return putPrivate(d[16:], r.PrivateData)
}

// Decode fills r from the class data of m (a SIDR_REQ); PrivateData views m.
func (r *SIDRREQ) Decode(m MAD) {
	d := m.Data()
	*r = SIDRREQ{
		RequestID:   binary.BigEndian.Uint32(d[0:]),
		PKey:        binary.BigEndian.Uint16(d[4:]),
		ServiceID:   binary.BigEndian.Uint64(d[8:]),
		PrivateData: d[16:],
	}
}

// Encode writes the SIDR_REP into m; AdditionalInfoLen is len(Info).
func (r *SIDRREP) Encode(m MAD, tid uint64) error {
	if r.QPN > 0xFFFFFF || len(r.Info) > SIDRREPInfoLen {
		return ErrBadField
	}
	m.setHeader(AttrSIDRREP, tid)
	d := m.Data()
	clear(d)
	binary.BigEndian.PutUint32(d[0:], r.RequestID)
	d[4] = byte(r.Status)
	d[5] = byte(len(r.Info))
	put24(d[8:], r.QPN)
	binary.BigEndian.PutUint64(d[12:], r.ServiceID)
	binary.BigEndian.PutUint32(d[20:], r.QKey)
	copy(d[24:96], r.Info)
	return putPrivate(d[96:], r.PrivateData)
}

// Decode fills r from m (a SIDR_REP). Info is cut to AdditionalInfoLen
// (at most 72); PrivateData is all 136 bytes. Both view m.
func (r *SIDRREP) Decode(m MAD) {
	d := m.Data()
	n := min(int(d[5]), SIDRREPInfoLen)
	*r = SIDRREP{
		RequestID:   binary.BigEndian.Uint32(d[0:]),
		Status:      SIDRStatus(d[4]),
		QPN:         be24(d[8:]),
		ServiceID:   binary.BigEndian.Uint64(d[12:]),
		QKey:        binary.BigEndian.Uint32(d[20:]),
		Info:        d[24 : 24+n],
		PrivateData: d[96:],
	}
}
