package agentproto

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Client is the tester's end of the connection. Calls are serialized: one
// request is outstanding at a time, as the protocol answers in order.
type Client struct {
	mu   sync.Mutex
	conn net.Conn
	sc   *bufio.Scanner
	next uint64
	// Hello is the agent's answer to the hello.
	Hello HelloResult
}

// Dial connects to the agent at addr and says hello.
func Dial(ctx context.Context, addr string) (*Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("agentproto: connect to the agent: %w", err)
	}
	c := NewClient(conn)
	if err := c.Call(OpHello, Hello{Version: Version, Tester: "rnic conform"}, &c.Hello); err != nil {
		conn.Close()
		return nil, err
	}
	if c.Hello.Version != Version {
		conn.Close()
		return nil, fmt.Errorf("agentproto: the agent speaks version %d, the tester %d", c.Hello.Version, Version)
	}
	return c, nil
}

// NewClient wraps an open connection (no hello is sent).
func NewClient(conn net.Conn) *Client {
	return &Client{conn: conn, sc: NewScanner(bufio.NewReader(conn))}
}

// Close closes the connection; the agent destroys the session's objects.
func (c *Client) Close() error { return c.conn.Close() }

// ErrNoAnswer is what a call's error matches (errors.Is) when the agent
// did not answer at all: the connection failed, closed or timed out.
var ErrNoAnswer = errors.New("the agent did not answer")

// callTimeout bounds one request: the longest wait a request may ask for
// plus slack for a busy machine.
const callTimeout = 60 * time.Second

// Call sends op with args (nil for none) and decodes the result into res
// (nil to ignore it). An agent-side failure is an *Error.
func (c *Client) Call(op string, args, res any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next++
	req := Request{ID: c.next, Op: op}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("agentproto: %s: %w", op, err)
		}
		req.Args = b
	}
	line, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("agentproto: %s: %w", op, err)
	}
	c.conn.SetDeadline(time.Now().Add(callTimeout))
	if _, err := c.conn.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("agentproto: %s: %w: %w", op, ErrNoAnswer, err)
	}
	if !c.sc.Scan() {
		err := c.sc.Err()
		if err == nil {
			err = errors.New("the agent closed the connection")
		}
		return fmt.Errorf("agentproto: %s: %w: %w", op, ErrNoAnswer, err)
	}
	var resp Response
	if err := json.Unmarshal(c.sc.Bytes(), &resp); err != nil {
		return fmt.Errorf("agentproto: %s: bad response: %w", op, err)
	}
	if resp.ID != req.ID {
		return fmt.Errorf("agentproto: %s: response id %d for request %d", op, resp.ID, req.ID)
	}
	if resp.Error != nil {
		return resp.Error
	}
	if res != nil && len(resp.Result) > 0 {
		if err := json.Unmarshal(resp.Result, res); err != nil {
			return fmt.Errorf("agentproto: %s: bad result: %w", op, err)
		}
	}
	return nil
}

// Typed calls, one per operation.

func (c *Client) DeviceInfo() (DeviceInfo, error) {
	var r DeviceInfo
	return r, c.Call(OpDeviceInfo, nil, &r)
}

func (c *Client) CreatePD() (uint32, error) {
	var r Handle
	return r.H, c.Call(OpCreatePD, nil, &r)
}

func (c *Client) RegMR(a RegMR) (MRInfo, error) {
	var r MRInfo
	return r, c.Call(OpRegMR, a, &r)
}

func (c *Client) DeregMR(h uint32) error { return c.Call(OpDeregMR, Handle{h}, nil) }

func (c *Client) AllocMW(a AllocMW) (MWInfo, error) {
	var r MWInfo
	return r, c.Call(OpAllocMW, a, &r)
}

func (c *Client) DeallocMW(h uint32) error { return c.Call(OpDeallocMW, Handle{h}, nil) }

func (c *Client) AttachMcast(a Mcast) error { return c.Call(OpAttachMcast, a, nil) }

func (c *Client) DetachMcast(a Mcast) error { return c.Call(OpDetachMcast, a, nil) }

func (c *Client) CreateCQ(cqe int) (uint32, error) {
	var r Handle
	return r.H, c.Call(OpCreateCQ, CreateCQ{CQE: cqe}, &r)
}

func (c *Client) CreateQP(a CreateQP) (QPInfo, error) {
	var r QPInfo
	return r, c.Call(OpCreateQP, a, &r)
}

func (c *Client) ModifyQP(qp uint32, attr QPAttr) error {
	return c.Call(OpModifyQP, ModifyQP{QP: qp, Attr: attr}, nil)
}

func (c *Client) QueryQP(qp uint32) (QPAttr, error) {
	var r QPAttr
	return r, c.Call(OpQueryQP, Handle{qp}, &r)
}

func (c *Client) DestroyQP(qp uint32) error { return c.Call(OpDestroyQP, Handle{qp}, nil) }

func (c *Client) PostSend(qp uint32, wrs ...SendWR) error {
	return c.Call(OpPostSend, PostSend{QP: qp, WRs: wrs}, nil)
}

func (c *Client) PostRecv(qp uint32, wrs ...RecvWR) error {
	return c.Call(OpPostRecv, PostRecv{QP: qp, WRs: wrs}, nil)
}

// PollCQ polls up to max completions, waiting up to wait for them.
func (c *Client) PollCQ(cq uint32, max int, wait time.Duration) ([]WC, error) {
	var r PollResult
	err := c.Call(OpPollCQ, PollCQ{CQ: cq, Max: max, WaitMS: int(wait / time.Millisecond)}, &r)
	return r.WCs, err
}

func (c *Client) ReadMR(mr uint32, off uint64, n int) ([]byte, error) {
	var r Data
	return r.Data, c.Call(OpReadMR, ReadMR{MR: mr, Off: off, Len: n}, &r)
}

func (c *Client) WriteMR(mr uint32, off uint64, data []byte) error {
	return c.Call(OpWriteMR, WriteMR{MR: mr, Off: off, Data: data}, nil)
}

// Events returns the async events since the last call, waiting up to
// wait for the first.
func (c *Client) Events(wait time.Duration) ([]Event, error) {
	var r EventsResult
	return r.Events, c.Call(OpEvents, Wait{WaitMS: int(wait / time.Millisecond)}, &r)
}

func (c *Client) Counters() ([]Counter, error) {
	var r CountersResult
	return r.Counters, c.Call(OpCounters, nil, &r)
}

func (c *Client) CMListen(port uint16) (CMListenResult, error) {
	var r CMListenResult
	return r, c.Call(OpCMListen, CMListen{Port: port}, &r)
}

func (c *Client) CMAccept(a CMAccept) (CMConnInfo, error) {
	var r CMConnInfo
	return r, c.Call(OpCMAccept, a, &r)
}

func (c *Client) CMConnect(a CMConnect) (CMConnInfo, error) {
	var r CMConnInfo
	return r, c.Call(OpCMConnect, a, &r)
}

func (c *Client) CMDisconnect(h uint32) error { return c.Call(OpCMDisconnect, Handle{h}, nil) }

// Reset destroys every object of the session.
func (c *Client) Reset() error { return c.Call(OpReset, nil, nil) }

// U8, U16, U32 and Int return pointers for QPAttr's optional fields.
func U8(v uint8) *uint8    { return &v }
func U16(v uint16) *uint16 { return &v }
func U32(v uint32) *uint32 { return &v }
func Int(v int) *int       { return &v }
