package mad

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestSIDRREQLayout checks each SIDR_REQ field at its Table 119 offset
// (class data starts at MAD byte 24) and decodes it back.
func TestSIDRREQLayout(t *testing.T) {
	m := make(MAD, MADLen)
	pd := bytes.Repeat([]byte{0xA5}, SIDRREQPrivateDataLen)
	r := SIDRREQ{RequestID: 0x11223344, PKey: 0xFFFF, ServiceID: ServiceID(PortSpaceUDP, 7174), PrivateData: pd}
	if err := r.Encode(m, 0x0102030405060708); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseMAD(m); err != nil || m.AttrID() != AttrSIDRREQ || m.TID() != 0x0102030405060708 {
		t.Fatalf("header: %v attr %v tid %#x", err, m.AttrID(), m.TID())
	}
	if binary.BigEndian.Uint32(m[24:]) != 0x11223344 || binary.BigEndian.Uint16(m[28:]) != 0xFFFF ||
		m[30] != 0 || m[31] != 0 || binary.BigEndian.Uint64(m[32:]) != 0x0000000001111C06 ||
		!bytes.Equal(m[40:256], pd) {
		t.Fatalf("SIDR_REQ bytes % x", m[24:48])
	}
	var r2 SIDRREQ
	r2.Decode(m)
	if r2.RequestID != r.RequestID || r2.PKey != r.PKey || r2.ServiceID != r.ServiceID || !bytes.Equal(r2.PrivateData, pd) {
		t.Fatalf("SIDR_REQ %+v", r2)
	}
	if (&SIDRREQ{PrivateData: make([]byte, SIDRREQPrivateDataLen+1)}).Encode(m, 1) != ErrPrivateData {
		t.Fatal("217 bytes of SIDR_REQ private data accepted")
	}
}

// TestSIDRREPLayout checks each SIDR_REP field at its Table 120 offset and
// decodes it back; a stale longer message leaves nothing behind.
func TestSIDRREPLayout(t *testing.T) {
	m := make(MAD, MADLen)
	for i := range m {
		m[i] = 0xEE // encoding must clear what it does not set
	}
	r := SIDRREP{RequestID: 0xCAFEBABE, Status: SIDRValid, QPN: 0xABCDEF, ServiceID: 0x0000000001111C06,
		QKey: 0x01234567, Info: []byte{1, 2, 3}, PrivateData: []byte("ud")}
	if err := r.Encode(m, 9); err != nil {
		t.Fatal(err)
	}
	d := m[24:]
	if binary.BigEndian.Uint32(d) != 0xCAFEBABE || d[4] != 0 || d[5] != 3 || d[6] != 0 || d[7] != 0 ||
		d[8] != 0xAB || d[9] != 0xCD || d[10] != 0xEF || d[11] != 0 ||
		binary.BigEndian.Uint64(d[12:]) != 0x0000000001111C06 || binary.BigEndian.Uint32(d[20:]) != 0x01234567 ||
		!bytes.Equal(d[24:27], []byte{1, 2, 3}) || d[27] != 0 || !bytes.Equal(d[96:98], []byte("ud")) || d[98] != 0 {
		t.Fatalf("SIDR_REP bytes % x", d[:32])
	}
	var r2 SIDRREP
	r2.Decode(m)
	if r2.RequestID != r.RequestID || r2.Status != SIDRValid || r2.QPN != r.QPN || r2.ServiceID != r.ServiceID ||
		r2.QKey != r.QKey || !bytes.Equal(r2.Info, r.Info) || len(r2.PrivateData) != SIDRREPPrivateDataLen ||
		m.AttrID() != AttrSIDRREP {
		t.Fatalf("SIDR_REP %+v", r2)
	}
	for _, bad := range []SIDRREP{{QPN: 1 << 24}, {Info: make([]byte, SIDRREPInfoLen+1)}} {
		if bad.Encode(m, 1) != ErrBadField {
			t.Fatalf("%+v accepted", bad)
		}
	}
	if (&SIDRREP{PrivateData: make([]byte, SIDRREPPrivateDataLen+1)}).Encode(m, 1) != ErrPrivateData {
		t.Fatal("137 bytes of SIDR_REP private data accepted")
	}
}

// TestSIDRREPInfoLenClamped: a peer's AdditionalInfoLen beyond 72 is cut,
// never read past the info field.
func TestSIDRREPInfoLenClamped(t *testing.T) {
	m := make(MAD, MADLen)
	(&SIDRREP{Status: SIDRRejected}).Encode(m, 1)
	m[24+5] = 0xFF
	var r SIDRREP
	r.Decode(m)
	if len(r.Info) != SIDRREPInfoLen || r.Status != SIDRRejected || r.Status.String() != "rejected" {
		t.Fatalf("info %d status %v", len(r.Info), r.Status)
	}
}
