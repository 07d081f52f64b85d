// rnic stat: what an rnicd serves, to whom, and how busy it is, in the
// manner of iproute2's rdma tool (rdma link / resource / statistic show).

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/rnicd/client"
	"github.com/rnic/rnic/nic/rnicd/proto"
)

const statHelp = `usage: rnic stat [-d NAME@SOCKET | --socket PATH] [--json] [link|clients|qp|counters]

Shows what an rnicd serves, like rdma link show, rdma resource show and
rdma statistic show do for the kernel's devices:

    daemon pid 4321 uid 0 view all
    link rnic0/1 state ACTIVE mtu 4096 link_mtu 9000 gid ::ffff:127.0.0.2
    client 3 pid 1234 uid 1000 comm pingpong dev rnic0 qps 1 mrs 1 objects 3 mr_bytes 8192
    qp link rnic0/1 lqpn 17 rqpn 18 type RC state RTS pid 1234 comm pingpong client 3
    counter link rnic0/1 rx_write_requests 12 ...
    counter rnicd clients_accepted 3 clients_reaped 1 ...

link: each device's port 1 (state, active path MTU, Ethernet MTU, GIDs).
clients: each connection (pid, uid and process name as the daemon saw
them when it connected, the device it opened, the QPs, MRs and other
objects it holds, the bytes of its memory registered). qp: each client's
QPs (rqpn, the peer's QPN, once an RC or UC QP has one). counters: each
device's port counters (rdma statistic's names) and the daemon's own
(clients accepted and reaped, objects and bytes the reaper freed, client
errors by kind). Without an argument, all of them.

Who sees what: a client whose uid is 0 or the daemon's sees every client;
any other sees only the clients of its own uid (the daemon's socket is
mode 0600, so that takes an administrator who opened it up). The daemon
line says which: view all, or view own.

-d NAME@SOCKET limits the listing to device NAME (and its clients) of the
rnicd on SOCKET; --socket PATH lists every device of the rnicd on PATH
(default ` + ibv.SocketRule + `). --json prints one JSON object instead.
Exits 1 when the daemon cannot be reached, 2 on bad usage.

flags:
`

// statSections are the listings, in output order.
var statSections = []string{"link", "clients", "qp", "counters"}

func runStat(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("rnic stat", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.StringP("ib-dev", "d", "", "only device NAME of the rnicd on SOCKET (NAME@SOCKET; NAME@ for the default socket)")
	socket := fs.String("socket", ibv.DefaultSocketPath(), "the rnicd's control socket")
	asJSON := fs.Bool("json", false, "print one JSON object")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), statHelp)
		fs.PrintDefaults()
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "rnic %s (rnic help stat)\n", withPrefix("stat: ", err))
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return usageErr(err)
	}
	show := map[string]bool{}
	switch fs.NArg() {
	case 0:
		for _, s := range statSections {
			show[s] = true
		}
	case 1:
		s := strings.TrimSuffix(fs.Arg(0), "s")
		switch s {
		case "link", "client", "qp", "counter":
		default:
			return usageErr(fmt.Errorf("unknown listing %q: link, clients, qp or counters", fs.Arg(0)))
		}
		show[map[string]string{"link": "link", "client": "clients", "qp": "qp", "counter": "counters"}[s]] = true
	default:
		return usageErr(fmt.Errorf("unexpected argument %q", fs.Arg(1)))
	}
	var only string
	if fs.Changed("ib-dev") {
		spec, err := ibv.ParseSpec(*dev)
		if err != nil {
			return usageErr(fmt.Errorf("-d: %w", err))
		}
		if spec.Backend != ibv.BackendDaemon {
			return usageErr(fmt.Errorf("-d %s: rnic stat reads an rnicd: give NAME@SOCKET", *dev))
		}
		if fs.Changed("socket") && spec.Socket != *socket {
			return usageErr(fmt.Errorf("-d %s and --socket %s name two daemons", *dev, *socket))
		}
		only, *socket = spec.Name, spec.Socket
	}

	st, err := client.QueryStat(*socket)
	if err != nil {
		fmt.Fprintf(stderr, "rnic %s\n", withPrefix("stat: ", err))
		return 1
	}
	if only != "" {
		if err := keepDevice(st, only); err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("stat: ", err))
			return 1
		}
	}
	r := newStatReport(st, show)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "rnic %s\n", withPrefix("stat: ", err))
			return 1
		}
		return 0
	}
	r.print(stdout)
	return 0
}

// keepDevice drops from st every device but name, and the clients that
// did not open it with their QPs.
func keepDevice(st *client.Stat, name string) error {
	var devs []proto.StatDevice
	for _, d := range st.Devices {
		if d.Name == name {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		return fmt.Errorf("the rnicd serves no device %s", name)
	}
	st.Devices = devs
	keep := map[uint64]bool{}
	var clients []proto.StatClient
	for _, c := range st.Clients {
		if c.Device == name {
			keep[c.ID] = true
			clients = append(clients, c)
		}
	}
	st.Clients = clients
	var qps []proto.StatQP
	for _, q := range st.QPs {
		if keep[q.Client] {
			qps = append(qps, q)
		}
	}
	st.QPs = qps
	return nil
}

// The report, as printed and as JSON. Sections not asked for are nil and
// left out of the JSON.
type statReport struct {
	Daemon   *statDaemon    `json:"daemon,omitempty"`
	Links    []statLink     `json:"links,omitempty"`
	Clients  *[]statClient  `json:"clients,omitempty"`
	QPs      *[]statQP      `json:"qps,omitempty"`
	Counters []statCounters `json:"counters,omitempty"`
}

type statDaemon struct {
	PID  uint32 `json:"pid"`
	UID  uint32 `json:"uid"`
	View string `json:"view"` // "all" or "own"
}

type statLink struct {
	Dev     string   `json:"dev"`
	Port    int      `json:"port"`
	State   string   `json:"state"`
	MTU     int      `json:"mtu"`
	LinkMTU uint32   `json:"link_mtu"`
	GIDs    []string `json:"gids"`
}

type statClient struct {
	ID      uint64 `json:"id"`
	PID     int32  `json:"pid"`
	UID     uint32 `json:"uid"`
	Comm    string `json:"comm"`
	Dev     string `json:"dev"`
	QPs     uint32 `json:"qps"`
	MRs     uint32 `json:"mrs"`
	Objects uint32 `json:"objects"`
	MRBytes uint64 `json:"mr_bytes"`
}

type statQP struct {
	Dev    string `json:"dev"`
	Port   int    `json:"port"`
	LQPN   uint32 `json:"lqpn"`
	RQPN   uint32 `json:"rqpn,omitempty"`
	Type   string `json:"type"`
	State  string `json:"state"`
	Client uint64 `json:"client"`
	PID    int32  `json:"pid"`
	Comm   string `json:"comm"`
}

// statCounters are the counters of a device's port (Dev set) or of the
// daemon (Dev empty): in order for the text, by name for JSON.
type statCounters struct {
	Dev      string
	Port     int
	Counters []proto.Counter
	Values   map[string]uint64
}

func (c statCounters) MarshalJSON() ([]byte, error) {
	scope := "rnicd"
	if c.Dev != "" {
		scope = "link"
	}
	return json.Marshal(struct {
		Scope    string            `json:"scope"`
		Dev      string            `json:"dev,omitempty"`
		Port     int               `json:"port,omitempty"`
		Counters map[string]uint64 `json:"counters"`
	}{scope, c.Dev, c.Port, c.Values})
}

func newStatReport(st *client.Stat, show map[string]bool) *statReport {
	r := &statReport{}
	view := "own"
	if st.Daemon.All {
		view = "all"
	}
	if len(show) == len(statSections) {
		r.Daemon = &statDaemon{PID: st.Daemon.PID, UID: st.Daemon.UID, View: view}
	}
	byID := map[uint64]proto.StatClient{}
	for _, c := range st.Clients {
		byID[c.ID] = c
	}
	if show["link"] {
		r.Links = []statLink{}
		for _, d := range st.Devices {
			l := statLink{Dev: d.Name, Port: 1, State: d.State.String(), MTU: d.ActiveMTU.Bytes(), LinkMTU: d.LinkMTU, GIDs: []string{}}
			for _, g := range d.GIDs {
				l.GIDs = append(l.GIDs, g.String())
			}
			r.Links = append(r.Links, l)
		}
	}
	if show["clients"] {
		cs := []statClient{}
		for _, c := range st.Clients {
			cs = append(cs, statClient{ID: c.ID, PID: c.PID, UID: c.UID, Comm: c.Comm, Dev: c.Device,
				QPs: c.QPs, MRs: c.MRs, Objects: c.Objects, MRBytes: c.MRBytes})
		}
		r.Clients = &cs
	}
	if show["qp"] {
		qs := []statQP{}
		for _, q := range st.QPs {
			c := byID[q.Client] // zero if it left between the listings
			qs = append(qs, statQP{Dev: c.Device, Port: 1, LQPN: q.QPN, RQPN: q.DestQPN, Type: q.Type.String(),
				State: q.State.String(), Client: q.Client, PID: c.PID, Comm: c.Comm})
		}
		r.QPs = &qs
	}
	if show["counters"] {
		r.Counters = []statCounters{}
		for _, d := range st.Devices {
			r.Counters = append(r.Counters, newStatCounters(d.Name, 1, d.Counters))
		}
		r.Counters = append(r.Counters, newStatCounters("", 0, st.Daemon.Counters))
	}
	return r
}

func newStatCounters(dev string, port int, cs []proto.Counter) statCounters {
	c := statCounters{Dev: dev, Port: port, Counters: cs, Values: make(map[string]uint64, len(cs))}
	for _, v := range cs {
		c.Values[v.Name] = v.Value
	}
	return c
}

// print writes the report as the rdma tool would: one line per object,
// key value pairs.
func (r *statReport) print(w io.Writer) {
	if d := r.Daemon; d != nil {
		fmt.Fprintf(w, "daemon pid %d uid %d view %s\n", d.PID, d.UID, d.View)
	}
	for _, l := range r.Links {
		fmt.Fprintf(w, "link %s/%d state %s mtu %d link_mtu %d", l.Dev, l.Port, l.State, l.MTU, l.LinkMTU)
		for _, g := range l.GIDs {
			fmt.Fprintf(w, " gid %s", g)
		}
		fmt.Fprintln(w)
	}
	if r.Clients != nil {
		for _, c := range *r.Clients {
			fmt.Fprintf(w, "client %d pid %d uid %d comm %s dev %s qps %d mrs %d objects %d mr_bytes %d\n",
				c.ID, c.PID, c.UID, orDash(c.Comm), orDash(c.Dev), c.QPs, c.MRs, c.Objects, c.MRBytes)
		}
	}
	if r.QPs != nil {
		for _, q := range *r.QPs {
			fmt.Fprintf(w, "qp link %s/%d lqpn %d", orDash(q.Dev), q.Port, q.LQPN)
			if q.RQPN != 0 {
				fmt.Fprintf(w, " rqpn %d", q.RQPN)
			}
			fmt.Fprintf(w, " type %s state %s pid %d comm %s client %d\n", q.Type, q.State, q.PID, orDash(q.Comm), q.Client)
		}
	}
	for _, c := range r.Counters {
		if c.Dev != "" {
			fmt.Fprintf(w, "counter link %s/%d", c.Dev, c.Port)
		} else {
			fmt.Fprint(w, "counter rnicd")
		}
		for _, v := range c.Counters {
			fmt.Fprintf(w, " %s %d", v.Name, v.Value)
		}
		fmt.Fprintln(w)
	}
}

// orDash keeps a line's key value pairs aligned when a value is unknown.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
