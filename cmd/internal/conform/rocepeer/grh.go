package rocepeer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// GRHLen is the room a UD receive buffer gives the Global Route Header
// (IBTA Vol 1 §11.4.1.1): 40 bytes ahead of the payload.
const GRHLen = 40

// CheckGRHv4 checks the 40 GRH bytes a UD receive placed ahead of a
// RoCEv2 datagram that arrived over IPv4 (Annex A17.4.5.1: the first 20
// bytes are zero, the IPv4 header is in the last 20), against the IPv4
// header the tester sent. The IP identification is not compared (a kernel
// socket on either side may choose it; DF datagrams are never
// fragmented); every other field is, and the header checksum must be valid.
func CheckGRHv4(grh, sent []byte) error {
	if len(grh) < GRHLen || len(sent) < 20 {
		return errors.New("GRH or sent header too short")
	}
	if !bytes.Equal(grh[:20], make([]byte, 20)) {
		return fmt.Errorf("GRH bytes 0-19 are % x, want zero", grh[:20])
	}
	got := grh[20:40]
	if sum := ipSum(got); sum != 0xFFFF {
		return fmt.Errorf("GRH IPv4 header checksum %#04x does not verify", binary.BigEndian.Uint16(got[10:]))
	}
	fields := []struct {
		name   string
		lo, hi int
	}{
		{"version/IHL", 0, 1}, {"TOS", 1, 2}, {"total length", 2, 4}, {"flags/fragment", 6, 8},
		{"TTL", 8, 9}, {"protocol", 9, 10}, {"source address", 12, 16}, {"destination address", 16, 20},
	}
	for _, f := range fields {
		if !bytes.Equal(got[f.lo:f.hi], sent[f.lo:f.hi]) {
			return fmt.Errorf("GRH IPv4 %s % x, sent % x", f.name, got[f.lo:f.hi], sent[f.lo:f.hi])
		}
	}
	return nil
}

func ipSum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xFFFF {
		s = s>>16 + s&0xFFFF
	}
	return uint16(s)
}
