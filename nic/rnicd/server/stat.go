// Administration and statistics (rnic stat): the daemon's counters, its
// devices, its clients and their QPs, in pages (proto/stat.go). Any
// connection may ask; a client sees the clients of other users only if
// its uid is 0 or the daemon's, since their pids, process names and QPNs
// are theirs.

package server

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/proto"
	"github.com/rnic/rnic/nic/verbs"
)

// statBudget is proto.StatBudget; tests lower it to make pages of one
// entry (atomic: sessions read it on their own goroutines).
var statBudget atomic.Int64

func init() { statBudget.Store(proto.StatBudget) }

func init() {
	Register(proto.OpStatDaemon, handleStatDaemon)
	Register(proto.OpStatDevices, handleStatDevices)
	Register(proto.OpStatClients, handleStatClients)
	Register(proto.OpStatQPs, handleStatQPs)
}

// readComm returns the process name of pid as the kernel has it, or ""
// (the process is gone, or there is no /proc).
func readComm(pid int32) string {
	if pid <= 0 {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	s := strings.TrimSuffix(string(b), "\n")
	if len(s) > proto.MaxComm {
		s = s[:proto.MaxComm]
	}
	return s
}

// seesAll reports whether s may see every client: its uid is root's or
// the daemon's. A session without credentials (SO_PEERCRED failed: pid
// 0) sees as little as possible, not as root.
func (s *Session) seesAll() bool {
	return s.cred.Pid > 0 && (s.cred.Uid == 0 || s.cred.Uid == uint32(os.Geteuid()))
}

// sees reports whether s may see other: another session of its own uid,
// or any if it sees all, of a tenant it sees (its own, or any from the
// host's socket). Never itself: an asking connection holds nothing worth
// listing.
func (s *Session) sees(other *Session) bool {
	if other == s || !s.seesTenant(other.tenant) {
		return false
	}
	return s.seesAll() || (s.cred.Pid > 0 && other.cred.Uid == s.cred.Uid)
}

// visibleSessions returns the sessions s may see, by ID.
func (s *Session) visibleSessions() []*Session {
	srv := s.srv
	srv.mu.Lock()
	out := make([]*Session, 0, len(srv.sessions))
	for o := range srv.sessions {
		if s.sees(o) {
			out = append(out, o)
		}
	}
	srv.mu.Unlock()
	slices.SortFunc(out, func(a, b *Session) int { return cmp.Compare(a.id, b.id) })
	return out
}

func handleStatDaemon(s *Session, req *Request, rep *Reply) error {
	if err := req.Decode(&proto.Empty{}); err != nil {
		return err
	}
	m := &proto.StatDaemonReply{PID: uint32(os.Getpid()), UID: uint32(os.Geteuid()), All: s.seesAll()}
	if !s.tenant.isHost() {
		// The daemon's counters sum every tenant's clients: a
		// tenant's own are in its STAT_TENANTS entry.
		rep.Set(m)
		return nil
	}
	for _, c := range s.srv.Stats().Counters() {
		m.Counters = append(m.Counters, proto.Counter{Name: c.Name, Value: c.Value})
	}
	rep.Set(m)
	return nil
}

func handleStatDevices(s *Session, req *Request, rep *Reply) error {
	var m proto.StatPage
	if err := req.Decode(&m); err != nil {
		return err
	}
	// A client lists the devices it may open: its tenant's.
	return statDevicesPage(s.tenant.devs, m.After, rep)
}

// statDevicesPage answers a page of devs, in name order, after the first
// after of them.
func statDevicesPage(devs map[string]*device, after uint64, rep *Reply) error {
	names := make([]string, 0, len(devs))
	for n := range devs {
		names = append(names, n)
	}
	slices.Sort(names)
	out := &proto.StatDevicesReply{}
	size := proto.NewWriter(nil)
	for i := after; i < uint64(len(names)); i++ {
		if int64(size.Len()) > statBudget.Load() {
			out.More = true
			break
		}
		d := statDevice(devs[names[i]].dev)
		d.Encode(size)
		out.Devices = append(out.Devices, d)
	}
	rep.Set(out)
	return nil
}

// statDevice describes d within the bounds of proto's decoder.
func statDevice(d ibv.Device) proto.StatDevice {
	sd := proto.StatDevice{Name: d.Name()}
	if a, err := d.QueryPort(1); err == nil {
		sd.State, sd.ActiveMTU, sd.LinkMTU = a.State, a.ActiveMTU, uint32(max(a.LinkMTU, 0))
	}
	sd.GIDs = d.GIDs()
	if len(sd.GIDs) > proto.MaxGIDs {
		sd.GIDs = sd.GIDs[:proto.MaxGIDs]
	}
	if c, ok := d.(ibv.Counters); ok {
		for _, v := range c.Counters() {
			if len(sd.Counters) == proto.MaxCounters {
				break
			}
			name := v.Name
			if len(name) > proto.MaxName {
				name = name[:proto.MaxName]
			}
			sd.Counters = append(sd.Counters, proto.Counter{Name: name, Value: v.Value})
		}
	}
	return sd
}

func handleStatClients(s *Session, req *Request, rep *Reply) error {
	var m proto.StatPage
	if err := req.Decode(&m); err != nil {
		return err
	}
	out := &proto.StatClientsReply{}
	size := proto.NewWriter(nil)
	for _, o := range s.visibleSessions() {
		if o.id <= m.After {
			continue
		}
		if int64(size.Len()) > statBudget.Load() {
			out.More = true
			break
		}
		c := o.info()
		sc := proto.StatClient{ID: c.ID, PID: c.PID, UID: c.UID, Comm: c.Comm, Device: c.Device,
			QPs: uint32(c.QPs), MRs: uint32(c.MRs), Objects: uint32(c.Objects), MRBytes: c.MRBytes}
		sc.Encode(size)
		out.Clients = append(out.Clients, sc)
	}
	rep.Set(out)
	return nil
}

func handleStatQPs(s *Session, req *Request, rep *Reply) error {
	var m proto.StatQPsPage
	if err := req.Decode(&m); err != nil {
		return err
	}
	out := &proto.StatQPsReply{}
	size := proto.NewWriter(nil)
sessions:
	for _, o := range s.visibleSessions() {
		if o.id < m.AfterClient {
			continue
		}
		qps := o.objectsOf(kindQP)
		slices.SortFunc(qps, func(a, b object) int { return cmp.Compare(a.(*qpObj).qp.QPN(), b.(*qpObj).qp.QPN()) })
		for _, obj := range qps {
			q := obj.(*qpObj).qp
			if o.id == m.AfterClient && q.QPN() <= m.AfterQPN {
				continue
			}
			if int64(size.Len()) > statBudget.Load() {
				out.More = true
				break sessions
			}
			sq := statQP(o.id, q)
			sq.Encode(size)
			out.QPs = append(out.QPs, sq)
		}
	}
	rep.Set(out)
	return nil
}

// statQP describes q. The owner may destroy it meanwhile: a QP that can
// no longer be queried is listed in the state State reports.
func statQP(client uint64, q ibv.QP) proto.StatQP {
	sq := proto.StatQP{Client: client, QPN: q.QPN(), Type: q.Type()}
	if t := q.Type(); t == verbs.QPTypeRC || t == verbs.QPTypeUC {
		if a, err := q.Query(); err == nil {
			sq.State = a.State
			if a.State >= verbs.QPSRTR {
				sq.DestQPN = a.DestQPN
			}
			return sq
		}
	}
	sq.State = q.State()
	return sq
}
