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

const statHelp = `usage: rnic stat [-d NAME@SOCKET | --socket PATH] [--json] [link|clients|qp|counters|tenants]

Shows what an rnicd serves, like rdma link show, rdma resource show and
rdma statistic show do for the kernel's devices:

    daemon pid 4321 uid 0 view all
    link rnic0/1 state ACTIVE mtu 4096 link_mtu 9000 gid ::ffff:127.0.0.2
    client 3 pid 1234 uid 1000 comm pingpong dev rnic0 qps 1 mrs 1 objects 3 mr_bytes 8192 wrs 20 completions 20 doorbells 4 errors 0
    qp link rnic0/1 lqpn 17 rqpn 18 type RC state RTS pid 1234 comm pingpong client 3
    counter link rnic0/1 rx_write_requests 12 ...
    counter rnicd clients_accepted 3 clients_reaped 1 ...
    counter client 3 requests 31 request_errors 0 send_wrs 10 recv_wrs 10 completions 20 ...
    counter tenant pod-a requests 31 ... send_wrs 10 ...
    tenant pod-a nics rnic1 clients 1 qps 1 mrs 1 mapped_bytes 2105344 queue_bytes 65536 max_qps 64

link: each device's port 1 (state, active path MTU, Ethernet MTU, GIDs);
on the host's socket an administrator sees the tenants' NICs too.
clients: each connection (pid, uid and process name as the daemon saw
them when it connected, the device it opened, the QPs, MRs and other
objects it holds, the bytes of its memory registered, the work requests
it posted, the completions it got, the doorbells it rang and its failed
requests and client errors, and its tenant if not the host's). qp: each client's
QPs (rqpn, the peer's QPN, once an RC or UC QP has one). counters: each
device's port counters (rdma statistic's names), the daemon's own
(clients accepted and reaped, objects and bytes the reaper freed, client
errors by kind), each client's and each tenant's (those of its clients,
gone ones included). tenants: each of the daemon's sockets (rnicd
--tenant; "-" is the host's): its NICs, clients, what they hold and its
limits. Without an argument, all of them (tenants only if the daemon has
any besides the host's).

Who sees what: a client whose uid is 0 or the daemon's sees every client;
any other sees only the clients of its own uid (the daemon's socket is
mode 0600, so that takes an administrator who opened it up). The daemon
line says which: view all, or view own. On a tenant's socket a client sees
its tenant's NICs, clients and counters only, and no daemon counters.

-d NAME@SOCKET limits the listing to device NAME (and its clients) of the
rnicd on SOCKET; --socket PATH lists every device of the rnicd on PATH
(default ` + ibv.SocketRule + `). --json prints one JSON object instead.
Exits 1 when the daemon cannot be reached, 2 on bad usage.

flags:
`

// statSections are the listings, in output order.
var statSections = []string{"link", "clients", "qp", "counters", "tenants"}

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
		case "link", "client", "qp", "counter", "tenant":
		default:
			return usageErr(fmt.Errorf("unknown listing %q: link, clients, qp, counters or tenants", fs.Arg(0)))
		}
		show[map[string]string{"link": "link", "client": "clients", "qp": "qp", "counter": "counters", "tenant": "tenants"}[s]] = true
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
	for _, d := range st.AllDevices {
		if d.Name == name {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		return fmt.Errorf("the rnicd serves no device %s", name)
	}
	st.AllDevices = devs
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
	var counts []proto.StatClientCounters
	for _, c := range st.Counters {
		if keep[c.ID] {
			counts = append(counts, c)
		}
	}
	st.Counters = counts
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
	Tenants  *[]statTenant  `json:"tenants,omitempty"`
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
	Tenant  string `json:"tenant,omitempty"`
	// The summary of its counters (all are in its "client" counters).
	WRs         uint64 `json:"wrs"`
	Completions uint64 `json:"completions"`
	Doorbells   uint64 `json:"doorbells"`
	Errors      uint64 `json:"errors"`
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

// statCounters are the counters of a scope: a device's port ("link", Dev
// and Port), the daemon ("rnicd"), a client ("client", Client) or a
// tenant ("tenant", Tenant): in order for the text, by name for JSON.
type statCounters struct {
	Scope    string
	Dev      string
	Port     int
	Client   uint64
	Tenant   string
	Counters []proto.Counter
	Values   map[string]uint64
}

func (c statCounters) MarshalJSON() ([]byte, error) {
	var tenant *string
	if c.Scope == "tenant" {
		tenant = &c.Tenant // "" is the host's, and said
	}
	return json.Marshal(struct {
		Scope    string            `json:"scope"`
		Dev      string            `json:"dev,omitempty"`
		Port     int               `json:"port,omitempty"`
		Client   uint64            `json:"client,omitempty"`
		Tenant   *string           `json:"tenant,omitempty"`
		Counters map[string]uint64 `json:"counters"`
	}{c.Scope, c.Dev, c.Port, c.Client, tenant, c.Values})
}

// statTenant is a tenant: its NICs, clients, holdings and limits (those
// set).
type statTenant struct {
	Name    string            `json:"name"`
	NICs    []string          `json:"nics"`
	Clients uint32            `json:"clients"`
	Held    map[string]uint64 `json:"held"`
	Limits  map[string]uint64 `json:"limits"`
	held    []proto.Counter
	limits  []proto.Counter
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
	countsOf := map[uint64]proto.StatClientCounters{}
	for _, c := range st.Counters {
		countsOf[c.ID] = c
	}
	if show["link"] {
		r.Links = []statLink{}
		for _, d := range st.AllDevices {
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
			sc := statClient{ID: c.ID, PID: c.PID, UID: c.UID, Comm: c.Comm, Dev: c.Device,
				QPs: c.QPs, MRs: c.MRs, Objects: c.Objects, MRBytes: c.MRBytes}
			sc.summarize(countsOf[c.ID])
			cs = append(cs, sc)
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
		for _, d := range st.AllDevices {
			r.Counters = append(r.Counters, newStatCounters(statCounters{Scope: "link", Dev: d.Name, Port: 1}, d.Counters))
		}
		if len(st.Daemon.Counters) > 0 { // none on a tenant's socket
			r.Counters = append(r.Counters, newStatCounters(statCounters{Scope: "rnicd"}, st.Daemon.Counters))
		}
		for _, c := range st.Counters {
			r.Counters = append(r.Counters, newStatCounters(statCounters{Scope: "client", Client: c.ID}, c.Counters))
		}
		for _, t := range st.Tenants {
			r.Counters = append(r.Counters, newStatCounters(statCounters{Scope: "tenant", Tenant: t.Name}, t.Counts))
		}
	}
	if show["tenants"] && (len(show) == 1 || hasTenants(st)) {
		ts := []statTenant{}
		for _, t := range st.Tenants {
			ts = append(ts, newStatTenant(t))
		}
		r.Tenants = &ts
	}
	return r
}

// hasTenants reports whether the daemon has tenants besides the host's
// that the asker sees.
func hasTenants(st *client.Stat) bool {
	return len(st.Tenants) > 1 || (len(st.Tenants) == 1 && st.Tenants[0].Name != "")
}

// summarize puts the summary of counts on the client's line: work
// requests, completions, doorbells and errors.
func (c *statClient) summarize(counts proto.StatClientCounters) {
	c.Tenant = counts.Tenant
	for _, v := range counts.Counters {
		switch v.Name {
		case "send_wrs", "recv_wrs":
			c.WRs += v.Value
		case "completions":
			c.Completions = v.Value
		case "doorbells":
			c.Doorbells = v.Value
		case "request_errors", "client_errors":
			c.Errors += v.Value
		}
	}
}

func newStatCounters(c statCounters, cs []proto.Counter) statCounters {
	c.Counters, c.Values = cs, make(map[string]uint64, len(cs))
	for _, v := range cs {
		c.Values[v.Name] = v.Value
	}
	return c
}

func newStatTenant(t proto.StatTenant) statTenant {
	st := statTenant{Name: t.Name, NICs: t.Devices, Clients: t.Clients, Held: map[string]uint64{}, Limits: map[string]uint64{},
		held: t.Held}
	if st.NICs == nil {
		st.NICs = []string{}
	}
	for _, v := range t.Held {
		st.Held[v.Name] = v.Value
	}
	for _, v := range t.Limits {
		if v.Value > 0 { // 0: no limit of the tenant's own
			st.Limits[v.Name] = v.Value
			st.limits = append(st.limits, v)
		}
	}
	return st
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
			fmt.Fprintf(w, "client %d pid %d uid %d comm %s dev %s qps %d mrs %d objects %d mr_bytes %d wrs %d completions %d doorbells %d errors %d",
				c.ID, c.PID, c.UID, orDash(c.Comm), orDash(c.Dev), c.QPs, c.MRs, c.Objects, c.MRBytes,
				c.WRs, c.Completions, c.Doorbells, c.Errors)
			if c.Tenant != "" {
				fmt.Fprintf(w, " tenant %s", c.Tenant)
			}
			fmt.Fprintln(w)
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
		switch c.Scope {
		case "link":
			fmt.Fprintf(w, "counter link %s/%d", c.Dev, c.Port)
		case "client":
			fmt.Fprintf(w, "counter client %d", c.Client)
		case "tenant":
			fmt.Fprintf(w, "counter tenant %s", orDash(c.Tenant))
		default:
			fmt.Fprint(w, "counter rnicd")
		}
		printPairs(w, c.Counters)
		fmt.Fprintln(w)
	}
	if r.Tenants != nil {
		for _, t := range *r.Tenants {
			fmt.Fprintf(w, "tenant %s nics %s clients %d", orDash(t.Name), orDash(strings.Join(t.NICs, ",")), t.Clients)
			printPairs(w, t.held)
			printPairs(w, t.limits)
			fmt.Fprintln(w)
		}
	}
}

// printPairs continues a line with name value pairs.
func printPairs(w io.Writer, cs []proto.Counter) {
	for _, v := range cs {
		fmt.Fprintf(w, " %s %d", v.Name, v.Value)
	}
}

// orDash keeps a line's key value pairs aligned when a value is unknown.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
