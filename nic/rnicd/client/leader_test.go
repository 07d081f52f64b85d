// The read path (leader.go): a call reads its own reply and hands on what
// else it reads; the background reader reads between calls. A scripted
// daemon answers out of order, sends events between replies and goes away
// mid-call.

package client_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// scriptedDaemon accepts one client, answers its OPEN and hands every
// later request to serve, which answers as it likes, and a read deadline
// that passes to serve with a zero header; the connection closes when
// serve returns false.
func scriptedDaemon(t *testing.T, serve func(c *net.UnixConn, h proto.Header, body []byte) bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scripted.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.AcceptUnix()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, proto.MaxMessage)
		for {
			n, _, _, _, err := c.ReadMsgUnix(buf, make([]byte, 256))
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if c.SetReadDeadline(time.Time{}) != nil || !serve(c, proto.Header{}, nil) {
					return
				}
				continue
			}
			if err != nil {
				return
			}
			h, body, err := proto.DecodeMessage(buf[:n], 0)
			if err != nil || h.Kind != proto.KindRequest {
				continue
			}
			if h.Op == proto.OpOpen {
				if sendOpenReply(c, proto.Header{Op: h.Op, Kind: proto.KindReply, Seq: h.Seq}) != nil {
					return
				}
				continue
			}
			if !serve(c, h, body) {
				return
			}
		}
	}()
	return path
}

// echo is a reply to h that carries the handle its request named.
func echo(h proto.Header, body []byte) []byte {
	var req proto.Handle
	req.Decode(proto.NewReader(body))
	return proto.AppendMessage(nil, proto.Header{Op: h.Op, Kind: proto.KindReply, Seq: h.Seq}, &proto.Handle{H: req.H})
}

// portEvent is a device event message.
func portEvent() []byte {
	return proto.AppendMessage(nil, proto.Header{Op: proto.OpEvent, Kind: proto.KindEvent},
		&proto.Event{Type: verbs.EventPortActive, Object: proto.ObjectNone, Port: 1})
}

// Many goroutines call at once; the daemon answers them in an order of
// its own (batches in reverse), an event before and after every reply.
// Every call gets the reply to its own request, and every event arrives:
// those read by a caller that leads as those read by the background
// reader, the one right behind the reply a leader waited for included.
// Polling, callers lead to their replies and pass the token on to the
// callers that waited for it.
func TestConcurrentCallsGetTheirReplies(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) { concurrentCalls(t, poll) })
	}
}

func concurrentCalls(t *testing.T, poll bool) {
	const callers, calls = 8, 300
	var events atomic.Int64
	var held [][]byte
	sock := scriptedDaemon(t, func(c *net.UnixConn, h proto.Header, body []byte) bool {
		if h.Op != 0 {
			held = append(held, echo(h, body))
			if len(held) < 3 {
				// Wait for more requests, unless none comes.
				return c.SetReadDeadline(time.Now().Add(200*time.Microsecond)) == nil
			}
		}
		for i := len(held) - 1; i >= 0; i-- {
			for _, m := range [][]byte{portEvent(), held[i], portEvent()} {
				if _, err := c.Write(m); err != nil {
					return false
				}
			}
			events.Add(2)
		}
		held = held[:0]
		return true
	})
	dev, err := client.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "scripted", Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if poll {
		client.PollForReplies(dev) // callers lead to the end, and pass the token on
	}
	var got atomic.Int64
	go func() {
		for range dev.Events() {
			got.Add(1)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				want := uint32(g<<16 | i)
				var rep proto.Handle
				if err := client.Call(dev, proto.OpQueryQP, &proto.Handle{H: want}, &rep); err != nil {
					errs <- err
					return
				}
				if rep.H != want {
					errs <- errors.New("a call got another's reply")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A busy machine may keep the events reader off a CPU until the
	// device's queue is full; those events are dropped, counted, as a
	// reader that does not read loses them. Every other one must arrive.
	arrived := func() int64 { return got.Load() + int64(client.EventsOverflowed(dev)) }
	for deadline := time.Now().Add(5 * time.Second); arrived() != events.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events arrived, %d dropped on a full queue", got.Load(), events.Load(), client.EventsOverflowed(dev))
		}
	}
	if n := client.EventsOverflowed(dev); n > 0 {
		t.Logf("%d of %d events dropped on a full queue", n, events.Load())
	}
}

// An event that arrives while a caller holds the read token, after the
// caller read its reply, wakes the background reader, which cannot read
// then; the caller reads it before it gives the token up.
func TestEventBehindALeadersReply(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS=1: no caller polls for its reply (transport/poll), none leads to the end")
	}
	var conn atomic.Pointer[net.UnixConn]
	var replied atomic.Bool
	sock := scriptedDaemon(t, func(c *net.UnixConn, h proto.Header, body []byte) bool {
		conn.Store(c)
		_, err := c.Write(echo(h, body))
		replied.Store(true)
		return err == nil
	})
	dev, err := client.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "scripted", Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	client.PollForReplies(dev)
	var sent atomic.Bool
	client.SetBeforeHandBack(t, func() {
		if replied.Load() && !sent.Swap(true) {
			conn.Load().Write(portEvent())
			time.Sleep(20 * time.Millisecond) // the background reader wakes and cannot read
		}
	})
	// A call whose reply takes longer than the polling is read by the
	// background reader: call until one reads its own.
	for i := 0; !sent.Load(); i++ {
		if i == 1000 {
			t.Fatal("no call of 1000 read its own reply")
		}
		replied.Store(false)
		if err := callWithin(dev, 5); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case e := <-dev.Events():
		if e.Type != verbs.EventPortActive {
			t.Errorf("event %v, want %v", e.Type, verbs.EventPortActive)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the event sent as the caller held the token never arrived")
	}
}

// callWithin makes a call naming h, which must end within 5 s.
func callWithin(dev ibv.Device, h uint32) error {
	done := make(chan error, 1)
	go func() { done <- client.Call(dev, proto.OpQueryQP, &proto.Handle{H: h}, &proto.Handle{}) }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("a call still waits after 5 s")
	}
}

// The daemon goes away while calls wait, one of them polling for its
// reply (it reads the end of the stream or the background reader does):
// every call fails with ErrDaemonGone, and the events channel closes.
func TestDaemonGoneFailsEveryWaiter(t *testing.T) {
	const waiters = 6
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprintf("poll=%v", poll), func(t *testing.T) {
			held := 0
			sock := scriptedDaemon(t, func(c *net.UnixConn, h proto.Header, body []byte) bool {
				if h.Op != 0 {
					held++
				}
				return held < waiters // the last request ends the connection
			})
			dev, err := client.Open(ibv.Spec{Backend: ibv.BackendDaemon, Name: "scripted", Socket: sock})
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			if poll {
				client.PollForReplies(dev)
			}
			errs := make(chan error, waiters)
			for i := range waiters {
				go func() { errs <- callWithin(dev, uint32(i)) }()
			}
			for range waiters {
				if err := <-errs; !errors.Is(err, client.ErrDaemonGone) {
					t.Fatalf("a call as the daemon went away: %v, want ErrDaemonGone", err)
				}
			}
			select {
			case _, ok := <-dev.Events():
				if ok {
					t.Error("an event from a daemon that sent none")
				}
			case <-time.After(5 * time.Second):
				t.Error("the events channel is open 5 s after the daemon went away")
			}
		})
	}
}
