package embedded

import (
	"context"
	"encoding/hex"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rnic/rnic/memory"
	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/ibv"
	"github.com/rnic/rnic/nic/verbs"
	"github.com/rnic/rnic/transport/pcap"
	"github.com/rnic/rnic/transport/tsharktest"
)

// iwEnd is a QP of an iWARP device with its CQ and a registered buffer.
type iwEnd struct {
	qp  ibv.QP
	cq  ibv.CQ
	mr  ibv.MR
	buf []byte
}

func newIWEnd(t *testing.T, d ibv.Device) *iwEnd {
	t.Helper()
	e := &iwEnd{}
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	e.buf = b.Bytes()
	if e.mr, err = d.RegMR(pd, e.buf, memory.LocalWrite); err != nil {
		t.Fatal(err)
	}
	if e.cq, err = d.CreateCQ(8); err != nil {
		t.Fatal(err)
	}
	e.qp, err = d.CreateQP(pd, ibv.QPInit{Type: verbs.QPTypeRC, SendCQ: e.cq, RecvCQ: e.cq,
		Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestIWARPPcap: the NIC's capture (IWARPConfig.Pcap) holds its
// connections as tshark reads them: the MPA Request with the private data
// of CMConnect, the Reply, and a SEND as RDMAP over DDP.
func TestIWARPPcap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "iwarp.pcap")
	w, err := pcap.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	na, err := OpenIWARP(IWARPConfig{Name: "iwa", Addr: netip.MustParseAddr("127.0.0.64"), Pcap: w})
	if err != nil {
		t.Fatal(err)
	}
	nb, err := OpenIWARP(IWARPConfig{Name: "iwb", Addr: netip.MustParseAddr("127.0.0.65")})
	if err != nil {
		t.Fatal(err)
	}
	da, db := na.Verbs(nic.IBVOptions{}), nb.Verbs(nic.IBVOptions{})
	defer db.Close()
	a, b := newIWEnd(t, da), newIWEnd(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := db.(ibv.ConnManager).CMListen(0)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err == nil {
			// In INIT with a receive posted, as after rdma_create_qp: the
			// SEND may follow the Reply at once, and iWARP has no RNR.
			err = b.qp.Modify(&verbs.QPAttr{State: verbs.QPSInit, PortNum: 1, AccessFlags: memory.LocalWrite},
				verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags)
		}
		if err == nil {
			err = b.qp.PostRecv(&verbs.RecvWR{ID: 1, SGL: []verbs.SGE{{Addr: b.mr.Addr(), Length: 4096, LKey: b.mr.LKey()}}})
		}
		if err == nil {
			_, err = req.Accept(ctx, b.qp, nil, nil)
		}
		accepted <- err
	}()
	cn, err := da.(ibv.ConnManager).CMConnect(ctx, a.qp, nb.Addr, l.Port(), []byte("rnic pcap"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	copy(a.buf, "hello over iWARP")
	if err := a.qp.PostSend(&verbs.SendWR{ID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{{Addr: a.mr.Addr(), Length: 16, LKey: a.mr.LKey()}}}); err != nil {
		t.Fatal(err)
	}
	wc := make([]verbs.WC, 1)
	for b.cq.Poll(wc) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the SEND did not arrive")
		}
		time.Sleep(time.Millisecond)
	}
	cn.Disconnect(ctx)
	da.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tsharktest.Check(t, path, tsharktest.Options{RequireMPA: true})
	rows := tsharktest.Fields(t, path, tsharktest.Options{Filter: "iwarp_mpa.key.req or iwarp_mpa.key.rep or iwarp_rdma"},
		"iwarp_mpa.key.req", "iwarp_mpa.key.rep", "iwarp_mpa.privatedata", "iwarp_rdma.opcode")
	var req, rep, send bool
	for _, r := range rows {
		switch {
		case r["iwarp_mpa.key.req"] != "":
			// The ULP's private data follows the IRD/ORD words.
			req = strings.Contains(strings.ReplaceAll(r["iwarp_mpa.privatedata"], ":", ""), hex.EncodeToString([]byte("rnic pcap")))
		case r["iwarp_mpa.key.rep"] != "":
			rep = true
		case r["iwarp_rdma.opcode"] == "0x03":
			send = true
		}
	}
	if !req || !rep || !send {
		t.Fatalf("tshark saw the MPA Request with its private data %v, the Reply %v, the SEND %v in %v", req, rep, send, rows)
	}
}
