// Asynchronous requests: ops whose outcome waits on the network (a TCP
// connect or accept, an rdma_cm connect, accept or disconnect) must not
// hold up the client's other requests, so they complete in two steps.
//
//	client                                  rnicd
//	  request {token, ...}  ──────────────▶ checks it, starts the work
//	                        ◀────────────── reply: started (or an error)
//	         ...                            (the network answers)
//	                        ◀────────────── result event {token, status, body}
//
// The client picks the token (unique among its requests in flight) and
// may cancel the work with the concern's cancel op; the result event comes
// either way, exactly once per started request. The result's body is the
// op's result (a message of the op's concern), present only on success.
//
//	+---------------------------------------------------------------+
//	|                             token                             |
//	+---------------------------------------------------------------+
//	|                             status                            |
//	+---------------------------------------------------------------+
//	|    error message length (u32) · message (status ≠ OK)         |
//	+---------------------------------------------------------------+
//	|    body length (u32) · body (status = OK)                      |
//	+---------------------------------------------------------------+

package proto

import "net/netip"

// Token names an asynchronous request of a client.
type Token struct{ Token uint32 }

func (m *Token) Encode(w *Writer) { w.U32(m.Token) }
func (m *Token) Decode(r *Reader) { m.Token = r.U32() }

// AsyncResult ends an asynchronous request: the body of the result
// events (OpNetResult, OpCMResult).
type AsyncResult struct {
	Token  uint32
	Status Status
	// Msg says what failed (Status ≠ StatusOK).
	Msg string
	// Body is the op's result, encoded (Status = StatusOK).
	Body []byte
}

func (m *AsyncResult) Encode(w *Writer) {
	w.U32(m.Token)
	w.U32(uint32(m.Status))
	w.String(m.Msg)
	w.Blob(m.Body)
}

func (m *AsyncResult) Decode(r *Reader) {
	m.Token = r.U32()
	m.Status = Status(r.U32())
	m.Msg = r.String(MaxErrorLen)
	m.Body = r.Blob(MaxMessage)
}

// Err returns the error the result stands for (nil on success).
func (m *AsyncResult) Err(op Op) error { return ErrorOf(op, m.Status, m.Msg) }

// DecodeResult decodes a successful result's body into body, which must
// consume it exactly.
func (m *AsyncResult) DecodeResult(body Message) error {
	r := NewReader(m.Body)
	body.Decode(r)
	return r.Done()
}

// Available is the reply of the query ops (OpNetQuery, OpCMQuery): whether
// the device offers the concern.
type Available struct{ Available bool }

func (m *Available) Encode(w *Writer) { w.Bool(m.Available) }
func (m *Available) Decode(r *Reader) { m.Available = r.Bool() }

// AddrPort writes an address and a port.
func (w *Writer) AddrPort(ap netip.AddrPort) {
	w.Addr(ap.Addr())
	w.U16(ap.Port())
}

// AddrPort reads what Writer.AddrPort wrote.
func (r *Reader) AddrPort() netip.AddrPort {
	a := r.Addr()
	return netip.AddrPortFrom(a, r.U16())
}
