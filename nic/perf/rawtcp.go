// The raw kernel TCP figure of an iWARP run, measured in the same run
// between the same two addresses, so that the iWARP figures read as a
// ratio of what the host's TCP allows:
//
//   - bw: the client writes the test's total bytes (Iters × QPs messages of
//     Size bytes, one write per message) on one connection and the server
//     reads them; the rate is the bytes over the time from the first write
//     to the last byte read.
//   - lat: a TCP ping-pong of Size-byte messages, as many round trips as
//     rnic made, each sample divided by the same round-trip factor as
//     rnic's.

package perf

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// rawTCP measures kernel TCP and fills res.Raw, or res.RawError.
func rawTCP(ctx context.Context, r *resolved, res *Result) {
	raw, err := rawTCPMeasure(ctx, r)
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

func rawTCPMeasure(ctx context.Context, r *resolved) (*RawStats, error) {
	l, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(r.server, 0)))
	if err != nil {
		return nil, fmt.Errorf("raw TCP: %w", err)
	}
	defer l.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: r.Addr.AsSlice()}}
	type accepted struct {
		c   net.Conn
		err error
	}
	ach := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ach <- accepted{c, err}
	}()
	cc, err := d.DialContext(ctx, "tcp", l.Addr().String())
	if err != nil {
		return nil, fmt.Errorf("raw TCP: %w", err)
	}
	defer cc.Close()
	a := <-ach
	if a.err != nil {
		return nil, fmt.Errorf("raw TCP: %w", a.err)
	}
	sc := a.c
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { cc.Close(); sc.Close() })
	defer stop()
	size, count := r.Size, r.Iters*r.QPs
	raw := &RawStats{Datagram: size, Payload: size}
	if r.Mode == ModeBW {
		total := int64(size) * int64(count)
		got := make(chan error, 1)
		var end time.Time
		go func() {
			buf := make([]byte, 1<<20)
			var n int64
			for n < total {
				k, err := sc.Read(buf)
				n += int64(k)
				if err != nil {
					got <- err
					return
				}
			}
			end = time.Now()
			got <- nil
		}()
		msg := make([]byte, size)
		start := time.Now()
		for i := 0; i < count; i++ {
			if _, err := cc.Write(msg); err != nil {
				return nil, fmt.Errorf("raw TCP: write: %w", err)
			}
		}
		if err := <-got; err != nil {
			return nil, fmt.Errorf("raw TCP: read: %w", err)
		}
		raw.Sent, raw.Received = count, count
		raw.Seconds = end.Sub(start).Seconds()
		if raw.Seconds <= 0 {
			raw.Seconds = 1e-9
		}
		raw.MBps = float64(total) / mb / raw.Seconds
		return raw, nil
	}
	// lat: the server echoes each message.
	echoed := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for i := 0; i < count; i++ {
			if _, err := io.ReadFull(sc, buf); err != nil {
				echoed <- err
				return
			}
			if _, err := sc.Write(buf); err != nil {
				echoed <- err
				return
			}
		}
		echoed <- nil
	}()
	if tc, ok := cc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if tc, ok := sc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	out, in := make([]byte, size), make([]byte, size)
	samples := make([]int64, count)
	for i := range samples {
		t0 := time.Now()
		if _, err := cc.Write(out); err != nil {
			return nil, fmt.Errorf("raw TCP: write: %w", err)
		}
		if _, err := io.ReadFull(cc, in); err != nil {
			return nil, fmt.Errorf("raw TCP: read: %w", err)
		}
		samples[i] = int64(time.Since(t0))
	}
	if err := <-echoed; err != nil {
		return nil, fmt.Errorf("raw TCP: echo: %w", err)
	}
	st := latStats(samples, r.rttFactor())
	raw.Lat = &st
	return raw, nil
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
