package agentproto

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
)

// FuzzDecodeRequest: any line decodes to a request with an op or to an
// error, never a panic; what decodes survives a round trip, and its args
// decode into every argument type or fail cleanly.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"op":"hello","args":{"version":1}}`,
		`{"id":2,"op":"modify_qp","args":{"qp":3,"attr":{"state":2,"path_mtu":1024,"ah_attr":{"dgid":"::ffff:127.0.0.3"}}}}`,
		`{"id":3,"op":"post_send","args":{"qp":3,"wrs":[{"wr_id":1,"opcode":2,"sg_list":[{"addr":1,"length":2,"lkey":3}]}]}}`,
		`{"id":4,"op":"write_mr","args":{"mr":2,"offset":0,"data":"AAEC"}}`,
		`{"op":""}`, `{"id":-1,"op":"x"}`, `[]`, `null`, `{"id":1e99,"op":"y"}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := DecodeRequest(line)
		if err != nil {
			return
		}
		if r.Op == "" {
			t.Fatal("decoded a request without an op")
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := DecodeRequest(b)
		if err != nil || r2.Op != r.Op || r2.ID != r.ID {
			t.Fatalf("round trip: %+v, %v", r2, err)
		}
		for _, v := range []any{&Hello{}, &RegMR{}, &CreateQP{}, &ModifyQP{}, &PostSend{}, &PostRecv{}, &PollCQ{},
			&ReadMR{}, &WriteMR{}, &CMAccept{}, &CMConnect{}} {
			DecodeArgs(r, v)
		}
	})
}

func TestDecodeRequestRejects(t *testing.T) {
	for _, s := range []string{``, `{}`, `{"id":1}`, `{"id":"x","op":"hello"}`, `nonsense`} {
		if _, err := DecodeRequest([]byte(s)); err == nil {
			t.Errorf("%q decoded", s)
		}
	}
	if _, err := DecodeRequest([]byte(`{"op":"x","args":"` + strings.Repeat("a", MaxLine) + `"}`)); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("a line over MaxLine: %v", err)
	}
}

// TestClientCall checks the client's side of the framing against a
// scripted agent: ids matched, errors surfaced as *Error, a wrong id
// refused.
func TestClientCall(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		defer b.Close()
		sc := NewScanner(bufio.NewReader(b))
		answers := []string{
			`{"id":1,"result":{"version":1,"agent":"x","device":"d"}}`,
			`{"id":2,"error":{"code":"no_object","message":"no QP with handle 9"}}`,
			`{"id":7,"result":{}}`,
		}
		for _, ans := range answers {
			if !sc.Scan() {
				return
			}
			b.Write([]byte(ans + "\n"))
		}
	}()
	c := NewClient(a)
	var h HelloResult
	if err := c.Call(OpHello, Hello{Version: Version}, &h); err != nil || h.Device != "d" {
		t.Fatalf("hello: %+v %v", h, err)
	}
	err := c.DestroyQP(9)
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != CodeNoObject {
		t.Fatalf("destroy_qp: %v, want a no_object error", err)
	}
	if err := c.Reset(); err == nil || !strings.Contains(err.Error(), "response id 7") {
		t.Fatalf("a response with the wrong id: %v", err)
	}
}
