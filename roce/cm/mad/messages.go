package mad

import (
	"encoding/binary"
	"net/netip"
)

// The CM messages of IBTA Vol 1 §12.6 (Tables 106-113), laid out in the
// 232 bytes after the MAD header. Offsets below are from the start of the
// class data; a field narrower than its byte(s) sits in the high bits, as
// Linux's ibta_vol1_c12.h (CM_FIELD8_LOC/CM_FIELD_BLOC) places it and
// rxe's captures show:
//
//	REQ   0 LocalCommID | 4 rsvd | 8 ServiceID(64) | 16 LocalCAGUID(64) | 24 rsvd
//	     28 LocalQKey | 32 LocalQPN(24) RespRes(8) | 36 LocalEECN(24) InitDepth(8)
//	     40 RemoteEECN(24) RemoteCMRespTimeout(5) TransportType(2) E2EFC(1)
//	     44 StartingPSN(24) LocalCMRespTimeout(5) RetryCount(3)
//	     48 P_Key(16) | 50 PathMTU(4) RDCExists(1) RNRRetry(3) | 51 MaxCMRetries(4) SRQ(1) ExtTT(3)
//	     52 PrimaryLocalLID | 54 PrimaryRemoteLID | 56 PrimaryLocalGID(128) | 72 PrimaryRemoteGID(128)
//	     88 FlowLabel(20) rsvd(6) PacketRate(6) | 92 TrafficClass | 93 HopLimit
//	     94 SL(4) SubnetLocal(1) rsvd(3) | 95 LocalACKTimeout(5) rsvd(3)
//	     96..139 the alternate path (unused) | 140 PrivateData(92)
//	MRA   0 LocalCommID | 4 RemoteCommID | 8 MessageMRAed(2) | 9 ServiceTimeout(5) | 10 PrivateData(222)
//	REJ   0 LocalCommID | 4 RemoteCommID | 8 MessageRejected(2) | 9 RejInfoLen(7)
//	     10 Reason(16) | 12 ARI(72) | 84 PrivateData(148)
//	REP   0 LocalCommID | 4 RemoteCommID | 8 LocalQKey | 12 LocalQPN(24) | 16 LocalEECN(24)
//	     20 StartingPSN(24) | 24 RespRes | 25 InitDepth | 26 TargetACKDelay(5) Failover(2) E2EFC(1)
//	     27 RNRRetry(3) SRQ(1) | 28 LocalCAGUID(64) | 36 PrivateData(196)
//	RTU   0 LocalCommID | 4 RemoteCommID | 8 PrivateData(224)
//	DREQ  0 LocalCommID | 4 RemoteCommID | 8 RemoteQPN(24) | 12 PrivateData(220)
//	DREP  0 LocalCommID | 4 RemoteCommID | 8 PrivateData(224)
//
// Over RoCE there are no LIDs: rdma_cm puts the permissive LID 0xFFFF in
// both LID fields and the IPv4-mapped (or IPv6) GIDs in the GID fields.

// Private data sizes (§12.6).
const (
	REQPrivateDataLen  = 92
	MRAPrivateDataLen  = 222
	REJPrivateDataLen  = 148
	REJARILen          = 72
	REPPrivateDataLen  = 196
	RTUPrivateDataLen  = 224
	DREQPrivateDataLen = 220
	DREPPrivateDataLen = 224
)

// PermissiveLID is what RoCE puts in every LID field.
const PermissiveLID = 0xFFFF

// REQ is a ConnectRequest (§12.6.5), decoded.
type REQ struct {
	LocalCommID        uint32
	ServiceID          uint64
	LocalCAGUID        uint64
	LocalQKey          uint32
	LocalQPN           uint32
	ResponderResources uint8
	LocalEECN          uint32
	InitiatorDepth     uint8
	RemoteEECN         uint32
	// RemoteCMResponseTimeout is how long the sender will wait for the
	// passive side's answer, LocalCMResponseTimeout how long the sender
	// takes to answer: both 4.096 µs × 2^code.
	RemoteCMResponseTimeout uint8
	TransportType           uint8 // 0 RC, 1 UC, 3 XRC (§12.6.5)
	EndToEndFlowControl     bool
	StartingPSN             uint32
	LocalCMResponseTimeout  uint8
	RetryCount              uint8
	PKey                    uint16
	PathMTU                 uint8 // IB MTU code: 3 = 1024
	RDCExists               bool
	RNRRetryCount           uint8
	MaxCMRetries            uint8
	SRQ                     bool
	ExtTransportType        uint8
	PrimaryLocalLID         uint16
	PrimaryRemoteLID        uint16
	PrimaryLocalGID         netip.Addr
	PrimaryRemoteGID        netip.Addr
	FlowLabel               uint32
	PacketRate              uint8
	TrafficClass            uint8
	HopLimit                uint8
	SL                      uint8
	SubnetLocal             bool
	LocalACKTimeout         uint8
	// PrivateData is up to REQPrivateDataLen bytes; decoding returns all
	// 92 bytes (a view into the MAD).
	PrivateData []byte
}

// REP is a ConnectReply (§12.6.8).
type REP struct {
	LocalCommID, RemoteCommID uint32
	LocalQKey                 uint32
	LocalQPN                  uint32
	LocalEECN                 uint32
	StartingPSN               uint32
	ResponderResources        uint8
	InitiatorDepth            uint8
	TargetACKDelay            uint8
	FailoverAccepted          uint8
	EndToEndFlowControl       bool
	RNRRetryCount             uint8
	SRQ                       bool
	LocalCAGUID               uint64
	PrivateData               []byte
}

// RTU is a ReadyToUse (§12.6.9).
type RTU struct {
	LocalCommID, RemoteCommID uint32
	PrivateData               []byte
}

// MRA is a MessageReceiptAcknowledgement (§12.6.6): "I got your message,
// the answer takes longer".
type MRA struct {
	LocalCommID, RemoteCommID uint32
	MessageMRAed              uint8 // 0 REQ, 1 REP, 2 LAP
	ServiceTimeout            uint8
	PrivateData               []byte
}

// Messages an MRA or REJ refers to.
const (
	MsgREQ   = 0
	MsgREP   = 1
	MsgOther = 2 // LAP for MRA; "no message" / other for REJ
)

// REJ is a Reject (§12.6.7).
type REJ struct {
	LocalCommID, RemoteCommID uint32
	MessageRejected           uint8 // 0 REQ, 1 REP, 2 no message/other
	RejInfoLen                uint8
	Reason                    RejReason
	ARI                       []byte // additional rejection information, RejInfoLen bytes
	PrivateData               []byte
}

// DREQ is a DisconnectRequest (§12.6.10).
type DREQ struct {
	LocalCommID, RemoteCommID uint32
	RemoteQPN                 uint32
	PrivateData               []byte
}

// DREP is a DisconnectReply (§12.6.11).
type DREP struct {
	LocalCommID, RemoteCommID uint32
	PrivateData               []byte
}

// RejReason is a REJ reason code (§12.6.7.2, Table 109).
type RejReason uint16

// Reject reasons rdma_cm and this CM use.
const (
	RejNoQP                RejReason = 1
	RejNoEEC               RejReason = 2
	RejNoResources         RejReason = 3
	RejTimeout             RejReason = 4
	RejUnsupportedReq      RejReason = 5
	RejInvalidCommID       RejReason = 6
	RejInvalidCommInstance RejReason = 7
	RejInvalidServiceID    RejReason = 8
	RejInvalidTransport    RejReason = 9
	RejStaleConn           RejReason = 10
	RejRDCNotExist         RejReason = 11
	RejInvalidGID          RejReason = 12
	RejInvalidLID          RejReason = 13
	RejInvalidSL           RejReason = 14
	RejInvalidTrafficClass RejReason = 15
	RejInvalidHopLimit     RejReason = 16
	RejInvalidPacketRate   RejReason = 17
	RejInvalidAltGID       RejReason = 18
	RejPortCMRedirect      RejReason = 24
	RejPortRedirect        RejReason = 25
	RejInvalidMTU          RejReason = 26
	RejInsufficientRespRes RejReason = 27
	RejConsumerReject      RejReason = 28
	RejInvalidRNRRetry     RejReason = 29
	RejDuplicateLocalComm  RejReason = 30
	RejInvalidClassVersion RejReason = 31
	RejInvalidFlowLabel    RejReason = 32
	RejInvalidAltFlowLabel RejReason = 33
)

func (r RejReason) String() string {
	switch r {
	case RejNoQP:
		return "no QP"
	case RejNoResources:
		return "no resources"
	case RejTimeout:
		return "timeout"
	case RejInvalidCommID:
		return "invalid communication ID"
	case RejInvalidServiceID:
		return "invalid service ID"
	case RejStaleConn:
		return "stale connection"
	case RejInvalidGID:
		return "invalid GID"
	case RejInvalidMTU:
		return "invalid path MTU"
	case RejConsumerReject:
		return "consumer reject"
	}
	return "reason " + itoa(int(r))
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}

func put24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }
func be24(b []byte) uint32     { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }
func bit(v bool, mask byte) byte {
	if v {
		return mask
	}
	return 0
}

func putGID(b []byte, a netip.Addr) {
	if !a.IsValid() {
		clear(b[:16])
		return
	}
	g := a.As16() // an IPv4 address becomes ::ffff:a.b.c.d, the RoCEv2 GID
	copy(b, g[:])
}

func gid(b []byte) netip.Addr { return netip.AddrFrom16([16]byte(b[:16])) }

// putPrivate copies private data into its field, zero filling the rest.
func putPrivate(dst, pd []byte) error {
	if len(pd) > len(dst) {
		return ErrPrivateData
	}
	n := copy(dst, pd)
	clear(dst[n:])
	return nil
}

// Encode writes the REQ into m (MADLen bytes) with transaction ID tid.
func (r *REQ) Encode(m MAD, tid uint64) error {
	if r.LocalQPN > 0xFFFFFF || r.StartingPSN > 0xFFFFFF || r.FlowLabel > 0xFFFFF || r.LocalEECN > 0xFFFFFF || r.RemoteEECN > 0xFFFFFF {
		return ErrBadField
	}
	m.setHeader(AttrREQ, tid)
	d := m.Data()
	clear(d)
	binary.BigEndian.PutUint32(d[0:], r.LocalCommID)
	binary.BigEndian.PutUint64(d[8:], r.ServiceID)
	binary.BigEndian.PutUint64(d[16:], r.LocalCAGUID)
	binary.BigEndian.PutUint32(d[28:], r.LocalQKey)
	put24(d[32:], r.LocalQPN)
	d[35] = r.ResponderResources
	put24(d[36:], r.LocalEECN)
	d[39] = r.InitiatorDepth
	put24(d[40:], r.RemoteEECN)
	d[43] = r.RemoteCMResponseTimeout<<3 | (r.TransportType&3)<<1 | bit(r.EndToEndFlowControl, 1)
	put24(d[44:], r.StartingPSN)
	d[47] = r.LocalCMResponseTimeout<<3 | r.RetryCount&7
	binary.BigEndian.PutUint16(d[48:], r.PKey)
	d[50] = r.PathMTU<<4 | bit(r.RDCExists, 0x08) | r.RNRRetryCount&7
	d[51] = r.MaxCMRetries<<4 | bit(r.SRQ, 0x08) | r.ExtTransportType&7
	binary.BigEndian.PutUint16(d[52:], r.PrimaryLocalLID)
	binary.BigEndian.PutUint16(d[54:], r.PrimaryRemoteLID)
	putGID(d[56:], r.PrimaryLocalGID)
	putGID(d[72:], r.PrimaryRemoteGID)
	binary.BigEndian.PutUint32(d[88:], r.FlowLabel<<12|uint32(r.PacketRate&0x3F))
	d[92] = r.TrafficClass
	d[93] = r.HopLimit
	d[94] = r.SL<<4 | bit(r.SubnetLocal, 0x08)
	d[95] = r.LocalACKTimeout << 3
	return putPrivate(d[140:], r.PrivateData)
}

// Decode fills r from the class data of m (a REQ); PrivateData views m.
func (r *REQ) Decode(m MAD) {
	d := m.Data()
	*r = REQ{
		LocalCommID:             binary.BigEndian.Uint32(d[0:]),
		ServiceID:               binary.BigEndian.Uint64(d[8:]),
		LocalCAGUID:             binary.BigEndian.Uint64(d[16:]),
		LocalQKey:               binary.BigEndian.Uint32(d[28:]),
		LocalQPN:                be24(d[32:]),
		ResponderResources:      d[35],
		LocalEECN:               be24(d[36:]),
		InitiatorDepth:          d[39],
		RemoteEECN:              be24(d[40:]),
		RemoteCMResponseTimeout: d[43] >> 3,
		TransportType:           d[43] >> 1 & 3,
		EndToEndFlowControl:     d[43]&1 != 0,
		StartingPSN:             be24(d[44:]),
		LocalCMResponseTimeout:  d[47] >> 3,
		RetryCount:              d[47] & 7,
		PKey:                    binary.BigEndian.Uint16(d[48:]),
		PathMTU:                 d[50] >> 4,
		RDCExists:               d[50]&0x08 != 0,
		RNRRetryCount:           d[50] & 7,
		MaxCMRetries:            d[51] >> 4,
		SRQ:                     d[51]&0x08 != 0,
		ExtTransportType:        d[51] & 7,
		PrimaryLocalLID:         binary.BigEndian.Uint16(d[52:]),
		PrimaryRemoteLID:        binary.BigEndian.Uint16(d[54:]),
		PrimaryLocalGID:         gid(d[56:]),
		PrimaryRemoteGID:        gid(d[72:]),
		FlowLabel:               binary.BigEndian.Uint32(d[88:]) >> 12,
		PacketRate:              d[91] & 0x3F,
		TrafficClass:            d[92],
		HopLimit:                d[93],
		SL:                      d[94] >> 4,
		SubnetLocal:             d[94]&0x08 != 0,
		LocalACKTimeout:         d[95] >> 3,
		PrivateData:             d[140:232],
	}
}

// Encode writes the REP into m.
func (r *REP) Encode(m MAD, tid uint64) error {
	if r.LocalQPN > 0xFFFFFF || r.StartingPSN > 0xFFFFFF || r.LocalEECN > 0xFFFFFF {
		return ErrBadField
	}
	m.setHeader(AttrREP, tid)
	d := m.Data()
	clear(d)
	binary.BigEndian.PutUint32(d[0:], r.LocalCommID)
	binary.BigEndian.PutUint32(d[4:], r.RemoteCommID)
	binary.BigEndian.PutUint32(d[8:], r.LocalQKey)
	put24(d[12:], r.LocalQPN)
	put24(d[16:], r.LocalEECN)
	put24(d[20:], r.StartingPSN)
	d[24] = r.ResponderResources
	d[25] = r.InitiatorDepth
	d[26] = r.TargetACKDelay<<3 | (r.FailoverAccepted&3)<<1 | bit(r.EndToEndFlowControl, 1)
	d[27] = r.RNRRetryCount<<5 | bit(r.SRQ, 0x10)
	binary.BigEndian.PutUint64(d[28:], r.LocalCAGUID)
	return putPrivate(d[36:], r.PrivateData)
}

// Decode fills r from m (a REP).
func (r *REP) Decode(m MAD) {
	d := m.Data()
	*r = REP{
		LocalCommID:         binary.BigEndian.Uint32(d[0:]),
		RemoteCommID:        binary.BigEndian.Uint32(d[4:]),
		LocalQKey:           binary.BigEndian.Uint32(d[8:]),
		LocalQPN:            be24(d[12:]),
		LocalEECN:           be24(d[16:]),
		StartingPSN:         be24(d[20:]),
		ResponderResources:  d[24],
		InitiatorDepth:      d[25],
		TargetACKDelay:      d[26] >> 3,
		FailoverAccepted:    d[26] >> 1 & 3,
		EndToEndFlowControl: d[26]&1 != 0,
		RNRRetryCount:       d[27] >> 5,
		SRQ:                 d[27]&0x10 != 0,
		LocalCAGUID:         binary.BigEndian.Uint64(d[28:]),
		PrivateData:         d[36:232],
	}
}

// Encode writes the RTU into m.
func (r *RTU) Encode(m MAD, tid uint64) error {
	return encodeIDs(m, AttrRTU, tid, r.LocalCommID, r.RemoteCommID, 8, r.PrivateData)
}

// Decode fills r from m (an RTU).
func (r *RTU) Decode(m MAD) {
	d := m.Data()
	*r = RTU{binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), d[8:]}
}

// Encode writes the DREP into m.
func (r *DREP) Encode(m MAD, tid uint64) error {
	return encodeIDs(m, AttrDREP, tid, r.LocalCommID, r.RemoteCommID, 8, r.PrivateData)
}

// Decode fills r from m (a DREP).
func (r *DREP) Decode(m MAD) {
	d := m.Data()
	*r = DREP{binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), d[8:]}
}

// Encode writes the DREQ into m.
func (r *DREQ) Encode(m MAD, tid uint64) error {
	if r.RemoteQPN > 0xFFFFFF {
		return ErrBadField
	}
	if err := encodeIDs(m, AttrDREQ, tid, r.LocalCommID, r.RemoteCommID, 12, r.PrivateData); err != nil {
		return err
	}
	put24(m.Data()[8:], r.RemoteQPN)
	return nil
}

// Decode fills r from m (a DREQ).
func (r *DREQ) Decode(m MAD) {
	d := m.Data()
	*r = DREQ{binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), be24(d[8:]), d[12:]}
}

// Encode writes the MRA into m.
func (r *MRA) Encode(m MAD, tid uint64) error {
	if err := encodeIDs(m, AttrMRA, tid, r.LocalCommID, r.RemoteCommID, 10, r.PrivateData); err != nil {
		return err
	}
	d := m.Data()
	d[8] = r.MessageMRAed << 6
	d[9] = r.ServiceTimeout << 3
	return nil
}

// Decode fills r from m (an MRA).
func (r *MRA) Decode(m MAD) {
	d := m.Data()
	*r = MRA{binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), d[8] >> 6, d[9] >> 3, d[10:]}
}

// Encode writes the REJ into m; RejInfoLen is taken from len(ARI).
func (r *REJ) Encode(m MAD, tid uint64) error {
	if len(r.ARI) > REJARILen {
		return ErrBadField
	}
	if err := encodeIDs(m, AttrREJ, tid, r.LocalCommID, r.RemoteCommID, 84, r.PrivateData); err != nil {
		return err
	}
	d := m.Data()
	d[8] = r.MessageRejected << 6
	d[9] = byte(len(r.ARI)) << 1
	binary.BigEndian.PutUint16(d[10:], uint16(r.Reason))
	copy(d[12:84], r.ARI)
	return nil
}

// Decode fills r from m (a REJ). ARI is cut to RejInfoLen (at most 72).
func (r *REJ) Decode(m MAD) {
	d := m.Data()
	n := min(int(d[9]>>1), REJARILen)
	*r = REJ{binary.BigEndian.Uint32(d), binary.BigEndian.Uint32(d[4:]), d[8] >> 6, d[9] >> 1,
		RejReason(binary.BigEndian.Uint16(d[10:])), d[12 : 12+n], d[84:]}
}

func encodeIDs(m MAD, a AttrID, tid uint64, local, remote uint32, pdOff int, pd []byte) error {
	m.setHeader(a, tid)
	d := m.Data()
	clear(d)
	binary.BigEndian.PutUint32(d, local)
	binary.BigEndian.PutUint32(d[4:], remote)
	return putPrivate(d[pdOff:], pd)
}
