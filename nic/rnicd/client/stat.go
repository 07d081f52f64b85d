// Statistics of an rnicd (rnic stat): a connection of its own that opens
// no device, asks the admin ops page by page and returns one snapshot.

package client

import (
	"errors"
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

// Stat is what an rnicd reports about itself. Devices, clients and QPs
// are each one consistent listing, not one moment: a client that comes or
// goes between the requests may be in one and not the other.
type Stat struct {
	Daemon  proto.StatDaemonReply
	Devices []proto.StatDevice
	// Clients are the other connections the asker may see (all if
	// Daemon.All, else those of its own uid), by ID.
	Clients []proto.StatClient
	// QPs are those clients' QPs, by client ID and QPN.
	QPs []proto.StatQP
	// Counters are those clients' counters, by client ID; Tenants the
	// tenants the asker may see (its own; all from the host's socket with
	// uid 0 or the daemon's), the host's ("") first.
	Counters []proto.StatClientCounters
	Tenants  []proto.StatTenant
	// AllDevices are the devices of every tenant the asker sees (Devices
	// are those it may open: its tenant's).
	AllDevices []proto.StatDevice
}

// statTimeout bounds the whole query: a wedged daemon must not hang a
// monitoring tool.
const statTimeout = 10 * time.Second

// QueryStat asks the rnicd listening on socket (ibv.DefaultSocketPath() if
// empty) for its statistics.
func QueryStat(socket string) (*Stat, error) {
	if socket == "" {
		socket = ibv.DefaultSocketPath()
	}
	conn, _, err := dial(socket)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(statTimeout))
	a := &adminConn{conn: conn, buf: make([]byte, proto.MaxMessage)}
	st := &Stat{}
	if err := a.call(proto.OpStatDaemon, &proto.Empty{}, &st.Daemon); err != nil {
		return nil, err
	}
	for more := true; more; {
		var rep proto.StatDevicesReply
		if err := a.call(proto.OpStatDevices, &proto.StatPage{After: uint64(len(st.Devices))}, &rep); err != nil {
			return nil, err
		}
		if more = rep.More; more && len(rep.Devices) == 0 {
			return nil, errStalled(proto.OpStatDevices)
		}
		st.Devices = append(st.Devices, rep.Devices...)
	}
	for more, after := true, uint64(0); more; {
		var rep proto.StatClientsReply
		if err := a.call(proto.OpStatClients, &proto.StatPage{After: after}, &rep); err != nil {
			return nil, err
		}
		if more = rep.More; more && len(rep.Clients) == 0 {
			return nil, errStalled(proto.OpStatClients)
		}
		for _, c := range rep.Clients {
			if c.ID <= after {
				return nil, errBackwards(proto.OpStatClients)
			}
			after = c.ID
		}
		st.Clients = append(st.Clients, rep.Clients...)
	}
	// Entries come in cursor order, each after the last: a daemon that
	// repeats itself cannot keep this loop going.
	first := true // QPN 0 is not a cursor yet
	for more, page := true, (proto.StatQPsPage{}); more; {
		var rep proto.StatQPsReply
		if err := a.call(proto.OpStatQPs, &page, &rep); err != nil {
			return nil, err
		}
		if more = rep.More; more && len(rep.QPs) == 0 {
			return nil, errStalled(proto.OpStatQPs)
		}
		for _, q := range rep.QPs {
			if q.Client < page.AfterClient || (q.Client == page.AfterClient && q.QPN <= page.AfterQPN && !first) {
				return nil, errBackwards(proto.OpStatQPs)
			}
			page, first = proto.StatQPsPage{AfterClient: q.Client, AfterQPN: q.QPN}, false
		}
		st.QPs = append(st.QPs, rep.QPs...)
	}
	if err := a.clientCounters(st); err != nil {
		return nil, err
	}
	if err := a.tenants(st); err != nil {
		return nil, err
	}
	return st, a.allDevices(st)
}

// allDevices pages STAT_ALL_DEVICES into st.AllDevices.
func (a *adminConn) allDevices(st *Stat) error {
	for more := true; more; {
		var rep proto.StatDevicesReply
		if err := a.call(proto.OpStatAllDevices, &proto.StatPage{After: uint64(len(st.AllDevices))}, &rep); err != nil {
			return err
		}
		if more = rep.More; more && len(rep.Devices) == 0 {
			return errStalled(proto.OpStatAllDevices)
		}
		st.AllDevices = append(st.AllDevices, rep.Devices...)
	}
	return nil
}

// clientCounters pages STAT_CLIENT_COUNTERS into st.Counters.
func (a *adminConn) clientCounters(st *Stat) error {
	for more, after := true, uint64(0); more; {
		var rep proto.StatClientCountersReply
		if err := a.call(proto.OpStatClientCounters, &proto.StatPage{After: after}, &rep); err != nil {
			return err
		}
		if more = rep.More; more && len(rep.Clients) == 0 {
			return errStalled(proto.OpStatClientCounters)
		}
		for _, c := range rep.Clients {
			if c.ID <= after {
				return errBackwards(proto.OpStatClientCounters)
			}
			after = c.ID
		}
		st.Counters = append(st.Counters, rep.Clients...)
	}
	return nil
}

// tenants pages STAT_TENANTS into st.Tenants.
func (a *adminConn) tenants(st *Stat) error {
	for more := true; more; {
		var rep proto.StatTenantsReply
		if err := a.call(proto.OpStatTenants, &proto.StatPage{After: uint64(len(st.Tenants))}, &rep); err != nil {
			return err
		}
		if more = rep.More; more && len(rep.Tenants) == 0 {
			return errStalled(proto.OpStatTenants)
		}
		st.Tenants = append(st.Tenants, rep.Tenants...)
	}
	return nil
}

func errBackwards(op proto.Op) error {
	return fmt.Errorf("rnicd: %v: %w: an entry out of order", op, proto.ErrMalformed)
}

func errStalled(op proto.Op) error {
	return fmt.Errorf("rnicd: %v: %w: an empty page with more to come", op, proto.ErrMalformed)
}

// adminConn makes round trips one at a time on a connection that opened
// no device (so no event can arrive between them).
type adminConn struct {
	conn *net.UnixConn
	seq  uint32
	buf  []byte
}

// call makes one round trip, sending fds (SCM_RIGHTS) with the request.
func (a *adminConn) call(op proto.Op, req, resp proto.Message, fds ...int) error {
	a.seq++
	msg := proto.AppendMessage(nil, proto.Header{Op: op, Kind: proto.KindRequest, Seq: a.seq, NFDs: uint8(len(fds))}, req)
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := a.conn.WriteMsgUnix(msg, oob, nil); err != nil {
		return fmt.Errorf("rnicd: %v: %w: %w", op, ErrDaemonGone, err)
	}
	for {
		n, err := a.conn.Read(a.buf)
		if err != nil || n == 0 {
			if err == nil {
				err = errors.New("connection closed")
			}
			return fmt.Errorf("rnicd: %v: %w: %w", op, ErrDaemonGone, err)
		}
		h, body, err := proto.DecodeMessage(a.buf[:n], 0)
		if err != nil {
			return fmt.Errorf("rnicd: %v reply: %w", op, err)
		}
		if h.Kind != proto.KindReply || h.Seq != a.seq {
			continue // not ours (an event): skip it
		}
		if h.Op != op {
			return fmt.Errorf("rnicd: %v answered by %v: %w", op, h.Op, proto.ErrMalformed)
		}
		if h.Status != proto.StatusOK {
			r := proto.NewReader(body)
			return proto.ErrorOf(op, h.Status, r.String(proto.MaxErrorLen))
		}
		r := proto.NewReader(body)
		resp.Decode(r)
		if err := r.Done(); err != nil {
			return fmt.Errorf("rnicd: %v reply: %w", op, err)
		}
		return nil
	}
}
