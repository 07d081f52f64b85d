// The raw kernel TCP figure of an iWARP run, measured in the same run
// between the same two addresses, so that the iWARP figures read as a
// ratio of what the host's TCP allows:
//
//   - bw: the client writes the test's total bytes (Iters × QPs messages of
//     Size bytes, one write per message) on one connection, the server
//     reads them and answers one byte; the rate is the bytes over the time
//     from the first write to the answer, all on the client's clock.
//   - lat: a TCP ping-pong of Size-byte messages, as many round trips as
//     rnic made, each sample divided by the same round-trip factor as
//     rnic's.
//
// The server's end listens on an ephemeral port of its address, which it
// tells the client over the side channel (the choreography of the raw UDP
// figure, rawphase.go), in one process as in two.

package perf

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// setRawTCP records a raw TCP measurement and rnic's ratio to it.
func setRawTCP(res *Result, raw *RawStats, err error) {
	if err != nil {
		res.RawError = err.Error()
		return
	}
	if raw.Lat != nil {
		raw.Ratio = res.Lat.Typical / raw.Lat.Typical
	} else if raw.MBps > 0 {
		raw.Ratio = res.BW.AvgMBps / raw.MBps
	}
	res.Raw = raw
}

// listenRawTCP listens on an ephemeral port of addr.
func listenRawTCP(addr netip.Addr) (*net.TCPListener, error) {
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return nil, fmt.Errorf("raw TCP: %w", err)
	}
	return l, nil
}

// rawTCPServe is the server's end on c: it reads count messages of size
// bytes and answers one byte (bw), or echoes each message (lat).
func rawTCPServe(c net.Conn, mode Mode, size, count int) error {
	if mode == ModeBW {
		total := int64(size) * int64(count)
		buf := make([]byte, min(size, 1<<20))
		for n := int64(0); n < total; {
			k, err := c.Read(buf[:min(int64(len(buf)), total-n)])
			n += int64(k)
			if err != nil && n < total {
				return fmt.Errorf("raw TCP: read: %w", err)
			}
		}
		if _, err := c.Write([]byte{1}); err != nil {
			return fmt.Errorf("raw TCP: write: %w", err)
		}
		return nil
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	buf := make([]byte, size)
	for i := 0; i < count; i++ {
		if _, err := io.ReadFull(c, buf); err != nil {
			return fmt.Errorf("raw TCP: read: %w", err)
		}
		if _, err := c.Write(buf); err != nil {
			return fmt.Errorf("raw TCP: write: %w", err)
		}
	}
	return nil
}

// rawTCPClient connects from the client's address to the server's end at
// to and measures.
func rawTCPClient(ctx context.Context, r *resolved, to netip.AddrPort) (*RawStats, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: r.Addr.AsSlice()}}
	c, err := d.DialContext(ctx, "tcp", to.String())
	if err != nil {
		return nil, fmt.Errorf("raw TCP: %w", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	size, count := r.Size, r.Iters*r.QPs
	raw := &RawStats{Datagram: size, Payload: size}
	if r.Mode == ModeBW {
		msg := make([]byte, size)
		start := time.Now()
		for i := 0; i < count; i++ {
			if _, err := c.Write(msg); err != nil {
				return nil, fmt.Errorf("raw TCP: write: %w", err)
			}
		}
		if _, err := io.ReadFull(c, msg[:1]); err != nil {
			return nil, fmt.Errorf("raw TCP: read: %w", err)
		}
		raw.Sent, raw.Received = count, count
		raw.Seconds = max(time.Since(start).Seconds(), 1e-9)
		raw.MBps = float64(size) * float64(count) / mb / raw.Seconds
		return raw, nil
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	out, in := make([]byte, size), make([]byte, size)
	samples := make([]int64, count)
	for i := range samples {
		t0 := time.Now()
		if _, err := c.Write(out); err != nil {
			return nil, fmt.Errorf("raw TCP: write: %w", err)
		}
		if _, err := io.ReadFull(c, in); err != nil {
			return nil, fmt.Errorf("raw TCP: read: %w", err)
		}
		samples[i] = int64(time.Since(t0))
	}
	st := latStats(samples, r.rttFactor())
	raw.Lat = &st
	return raw, nil
}

// clientRawTCP runs the raw TCP measurement against a server in another
// process and fills res.Raw, or res.RawError when the measurement itself
// failed.
func clientRawTCP(ctx context.Context, r *resolved, ch *channel, res *Result) error {
	if err := ch.send(rawRequest{Kind: string(r.Mode), Datagram: r.Size, Count: r.Iters * r.QPs}); err != nil {
		return err
	}
	var port rawPort
	if err := ch.recv(&port); err != nil {
		return err
	}
	raw, rawErr := rawTCPClient(ctx, r, netip.AddrPortFrom(r.server, uint16(port.Port)))
	if err := ch.send(rawDone{}); err != nil {
		return err
	}
	var rep rawReport
	if err := ch.recv(&rep); err != nil {
		return err
	}
	setRawTCP(res, raw, rawErr)
	return nil
}

// serverRawTCP takes the server's part in the raw TCP measurement, which
// must be of the test's own size and count: its end runs until the client
// says it is done.
func serverRawTCP(r *resolved, local netip.Addr, ch *channel, rq rawRequest) error {
	if rq.Kind == "" {
		return nil
	}
	if rq.Kind != string(r.Mode) || rq.Datagram != r.Size || rq.Count != r.Iters*r.QPs {
		err := fmt.Errorf("perf: raw TCP request %+v does not match the test", rq)
		ch.fail(err)
		return err
	}
	l, err := listenRawTCP(local)
	if err != nil {
		ch.fail(err)
		return err
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		served <- rawTCPServe(c, r.Mode, r.Size, r.Iters*r.QPs)
	}()
	err = ch.send(rawPort{Port: l.Addr().(*net.TCPAddr).Port})
	if err == nil {
		err = ch.recv(&rawDone{})
	}
	// The client is done with its end: an Accept still waiting (its
	// connection failed) ends here; a failed measurement is the client's
	// to report.
	l.Close()
	<-served
	if err != nil {
		return err
	}
	return ch.send(rawReport{})
}

// rawTCPLine is an iWARP report's last line: the raw TCP figure and
// rnic's ratio to it.
func rawTCPLine(res *Result) string {
	r := res.Raw
	switch {
	case res.RawError != "":
		return fmt.Sprintf("raw tcp: not measured: %s\n", res.RawError)
	case r == nil:
		return ""
	case r.Lat != nil:
		return fmt.Sprintf("raw tcp: t_typical %.2f usec, rnic/raw = %.2f (%d round trips of %d-byte messages)\n",
			r.Lat.Typical, r.Ratio, r.Lat.Samples, r.Payload)
	}
	return fmt.Sprintf("raw tcp: %.2f MB/sec, rnic/raw = %.2f (%d writes of %d bytes)\n",
		r.MBps, r.Ratio, r.Sent, r.Payload)
}
