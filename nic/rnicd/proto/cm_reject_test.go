package proto

import (
	"bytes"
	"testing"
)

// FuzzCMRejectInfo: a rejected CM_CONNECT's body decodes only within its
// bounds (148 bytes of private data at most) and re-encodes to itself.
func FuzzCMRejectInfo(f *testing.F) {
	w := NewWriter(nil)
	(&CMRejectInfo{Reason: 28, PrivateData: []byte("nope")}).Encode(w)
	f.Add(w.Bytes())
	f.Add(make([]byte, 2+4+149))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m CMRejectInfo
		r := NewReader(b)
		m.Decode(r)
		if r.Done() != nil {
			return
		}
		if len(m.PrivateData) > MaxRejectPrivateData {
			t.Fatalf("%d bytes of private data decoded", len(m.PrivateData))
		}
		w := NewWriter(nil)
		m.Encode(w)
		if !bytes.Equal(w.Bytes(), b) {
			t.Fatalf("% x re-encodes as % x", b, w.Bytes())
		}
	})
}
