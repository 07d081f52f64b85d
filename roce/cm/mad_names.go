// The MAD vocabulary (package mad: the CM messages of IBTA Vol 1 §12.6
// and the RDMA CM header of Annex A11) under this package's names, so that
// users of the connection manager name one package. A program that only
// builds or parses MADs imports mad, which does not pull in the engine.

package cm

import "github.com/rnic/rnic/roce/cm/mad"

type (
	AttrID     = mad.AttrID
	CMAHeader  = mad.CMAHeader
	DREP       = mad.DREP
	DREQ       = mad.DREQ
	MAD        = mad.MAD
	MRA        = mad.MRA
	REJ        = mad.REJ
	REP        = mad.REP
	REQ        = mad.REQ
	RTU        = mad.RTU
	RejReason  = mad.RejReason
	SIDRREP    = mad.SIDRREP
	SIDRREQ    = mad.SIDRREQ
	SIDRStatus = mad.SIDRStatus
)

const (
	AttrAPR                = mad.AttrAPR
	AttrClassPortInfo      = mad.AttrClassPortInfo
	AttrDREP               = mad.AttrDREP
	AttrDREQ               = mad.AttrDREQ
	AttrLAP                = mad.AttrLAP
	AttrMRA                = mad.AttrMRA
	AttrREJ                = mad.AttrREJ
	AttrREP                = mad.AttrREP
	AttrREQ                = mad.AttrREQ
	AttrRTU                = mad.AttrRTU
	AttrSIDRREP            = mad.AttrSIDRREP
	AttrSIDRREQ            = mad.AttrSIDRREQ
	BaseVersion            = mad.BaseVersion
	CMAHeaderLen           = mad.CMAHeaderLen
	CMClassVersion         = mad.CMClassVersion
	DREPPrivateDataLen     = mad.DREPPrivateDataLen
	DREQPrivateDataLen     = mad.DREQPrivateDataLen
	DataLen                = mad.DataLen
	MADHeaderLen           = mad.MADHeaderLen
	MADLen                 = mad.MADLen
	MRAPrivateDataLen      = mad.MRAPrivateDataLen
	MaxREQUserData         = mad.MaxREQUserData
	MethodSend             = mad.MethodSend
	MgmtClassCM            = mad.MgmtClassCM
	MsgOther               = mad.MsgOther
	MsgREP                 = mad.MsgREP
	MsgREQ                 = mad.MsgREQ
	PermissiveLID          = mad.PermissiveLID
	PortSpaceIB            = mad.PortSpaceIB
	PortSpaceTCP           = mad.PortSpaceTCP
	PortSpaceUDP           = mad.PortSpaceUDP
	REJARILen              = mad.REJARILen
	REJPrivateDataLen      = mad.REJPrivateDataLen
	REPPrivateDataLen      = mad.REPPrivateDataLen
	REQPrivateDataLen      = mad.REQPrivateDataLen
	RTUPrivateDataLen      = mad.RTUPrivateDataLen
	RejConsumerReject      = mad.RejConsumerReject
	RejDuplicateLocalComm  = mad.RejDuplicateLocalComm
	RejInsufficientRespRes = mad.RejInsufficientRespRes
	RejInvalidAltFlowLabel = mad.RejInvalidAltFlowLabel
	RejInvalidAltGID       = mad.RejInvalidAltGID
	RejInvalidClassVersion = mad.RejInvalidClassVersion
	RejInvalidCommID       = mad.RejInvalidCommID
	RejInvalidCommInstance = mad.RejInvalidCommInstance
	RejInvalidFlowLabel    = mad.RejInvalidFlowLabel
	RejInvalidGID          = mad.RejInvalidGID
	RejInvalidServiceID    = mad.RejInvalidServiceID
	RejInvalidHopLimit     = mad.RejInvalidHopLimit
	RejInvalidLID          = mad.RejInvalidLID
	RejInvalidMTU          = mad.RejInvalidMTU
	RejInvalidPacketRate   = mad.RejInvalidPacketRate
	RejInvalidRNRRetry     = mad.RejInvalidRNRRetry
	RejInvalidSL           = mad.RejInvalidSL
	RejInvalidTrafficClass = mad.RejInvalidTrafficClass
	RejInvalidTransport    = mad.RejInvalidTransport
	RejNoEEC               = mad.RejNoEEC
	RejNoQP                = mad.RejNoQP
	RejNoResources         = mad.RejNoResources
	RejPortCMRedirect      = mad.RejPortCMRedirect
	RejPortRedirect        = mad.RejPortRedirect
	RejRDCNotExist         = mad.RejRDCNotExist
	RejStaleConn           = mad.RejStaleConn
	RejTimeout             = mad.RejTimeout
	RejUnsupportedReq      = mad.RejUnsupportedReq
	SIDRNoQP               = mad.SIDRNoQP
	SIDRREPInfoLen         = mad.SIDRREPInfoLen
	SIDRREPPrivateDataLen  = mad.SIDRREPPrivateDataLen
	SIDRREQPrivateDataLen  = mad.SIDRREQPrivateDataLen
	SIDRRedirect           = mad.SIDRRedirect
	SIDRRejected           = mad.SIDRRejected
	SIDRUnsupported        = mad.SIDRUnsupported
	SIDRUnsupportedVersion = mad.SIDRUnsupportedVersion
	SIDRValid              = mad.SIDRValid
)

var (
	ErrBadCMAHeader = mad.ErrBadCMAHeader
	ErrBadField     = mad.ErrBadField
	ErrBadMethod    = mad.ErrBadMethod
	ErrNotCM        = mad.ErrNotCM
	ErrPrivateData  = mad.ErrPrivateData
	ErrShort        = mad.ErrShort
	ErrUnknownAttr  = mad.ErrUnknownAttr
)

// ParseMAD checks that b is a CM MAD this manager can read (mad.ParseMAD).
func ParseMAD(b []byte) (MAD, error) { return mad.ParseMAD(b) }

// ServiceID is the RDMA CM service ID of port in port space ps
// (mad.ServiceID).
func ServiceID(ps, port uint16) uint64 { return mad.ServiceID(ps, port) }

// ServicePort splits an RDMA CM service ID (mad.ServicePort).
func ServicePort(sid uint64) (ps, port uint16, ok bool) { return mad.ServicePort(sid) }
