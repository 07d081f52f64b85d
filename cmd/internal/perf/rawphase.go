// The raw UDP measurement's choreography over the side channel: the client
// asks, the server opens a sink or an echo and says where, the client
// measures and says when it is done, the server reports what it received.

package perf

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

// clientRaw runs the raw UDP measurement with the server and fills
// res.Raw, or res.RawError when the measurement itself failed.
func clientRaw(ctx context.Context, r *resolved, ch *channel, res *Result) error {
	d, p := r.rawDatagram()
	rq := rawRequest{Kind: string(r.Mode), Datagram: d, Count: r.Iters * r.QPs}
	if r.Mode == ModeBW {
		rq.Count *= r.packets()
	}
	if err := ch.send(rq); err != nil {
		return err
	}
	var port rawPort
	if err := ch.recv(&port); err != nil {
		return err
	}
	to := netip.AddrPortFrom(r.server, uint16(port.Port))
	raw := &RawStats{Datagram: d, Payload: p}
	var rawErr error
	var samples []int64
	if r.Mode == ModeBW {
		raw.Sent, rawErr = rawBlast(ctx, r.Addr, to, d, rq.Count)
	} else {
		samples, rawErr = rawPing(ctx, r.Addr, to, d, rq.Count)
	}
	if err := ch.send(rawDone{Sent: raw.Sent}); err != nil {
		return err
	}
	var rep rawReport
	if err := ch.recv(&rep); err != nil {
		return err
	}
	if rawErr != nil {
		res.RawError = rawErr.Error()
		return nil
	}
	if r.Mode == ModeBW {
		raw.Received, raw.Seconds = rep.Received, float64(rep.SpanNS)/1e9
		if rep.Received < 2 || rep.SpanNS <= 0 {
			res.RawError = fmt.Sprintf("raw UDP: %d of %d datagrams arrived, too few for a rate", rep.Received, raw.Sent)
			return nil
		}
		// The first arrival starts the clock: n datagrams arrive in n−1
		// gaps.
		raw.MBps = float64(rep.Received-1) * float64(p) / mb / raw.Seconds
		raw.Ratio = res.BW.AvgMBps / raw.MBps
	} else {
		st := latStats(samples, r.rttFactor())
		raw.Lat = &st
		raw.Ratio = res.Lat.Typical / st.Typical
	}
	res.Raw = raw
	return nil
}

// serverRaw takes the server's part in the raw UDP measurement: a sink
// that counts (bw) or an echo (lat) on an ephemeral port of its address.
func serverRaw(r *resolved, ch *channel, rq rawRequest) error {
	if rq.Kind == "" {
		return nil
	}
	conn, err := listenRaw(r.Addr)
	if err != nil {
		ch.fail(err)
		return err
	}
	port := rawPort{Port: conn.LocalAddr().(*net.UDPAddr).Port}
	var rep rawReport
	if rq.Kind == string(ModeBW) {
		sink := startSink(conn)
		if err := ch.send(port); err != nil {
			sink.stop(0)
			return err
		}
		var d rawDone
		err := ch.recv(&d)
		n, span := sink.stop(d.Sent)
		if err != nil {
			return err
		}
		rep = rawReport{Received: n, SpanNS: int64(span)}
	} else {
		done := startEcho(conn)
		err := ch.send(port)
		if err == nil {
			err = ch.recv(&rawDone{})
		}
		conn.Close()
		<-done
		if err != nil {
			return err
		}
	}
	return ch.send(rep)
}
