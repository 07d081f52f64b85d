package dropin

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// mcastGroup is a random group of 230.0.0.0/8, so that runs of the test
// on one host do not meet.
func mcastGroup() string {
	return fmt.Sprintf("230.%d.%d.%d", rand.IntN(256), rand.IntN(256), 1+rand.IntN(254))
}

// TestMckey: librdmacm's mckey, both roles, unmodified, through rnic exec.
// Each joins the group with rdma_join_multicast_ex (MULTICAST_JOIN: the
// group's AH attributes, QPN 0xFFFFFF, RDMA_UDP_QKEY), which attaches its
// QP; the sender on rnic1 sends its 10 datagrams to the group, the
// receiver on rnic0 gets all 10 through the kernel's multicast between
// the NICs' addresses; both leave (ibv_detach_mcast) and end. The sender
// posts its sends unsignaled and destroys its AH at once, before the
// daemon may have taken them from the ring (server's
// TestUDSendThenDestroyAH).
func TestMckey(t *testing.T) {
	needLibrary(t)
	needPrograms(t, "mckey")
	if why := mckeyOnce(t, sharedDaemon(t)); why != "" {
		t.Fatal(why)
	}
}

// mckeyOnce runs a receiver and then a sender on a new group; it returns
// why they failed, or "".
func mckeyOnce(t *testing.T, d *daemon) string {
	t.Helper()
	group := mcastGroup()
	deadline := time.After(programTimeout)
	recv := d.run(t, "receiver", "", nil, lineBuffered([]string{"mckey", "-m", group, "-b", d.addrs[0]})...)
	joined := "mckey: joined dgid: ::ffff:" + group
	for !strings.Contains(recv.out.String(), joined) {
		select {
		case <-recv.done:
			return fmt.Sprintf("the receiver ended before joining\n%s\n%s", recv.report(), d.p.report())
		case <-deadline:
			recv.kill()
			return fmt.Sprintf("the receiver did not join\n%s", recv.report())
		case <-time.After(20 * time.Millisecond):
		}
	}
	send := d.run(t, "sender", "", nil, lineBuffered([]string{"mckey", "-s", "-m", group, "-b", d.addrs[1]})...)
	send.wait(deadline)
	// the receiver has its datagrams once the sender is done with them
	stat := ""
	select {
	case <-recv.done:
	case <-time.After(20 * time.Second):
		// What the daemon counted while the receiver still waits.
		st := start(t, "rnic stat", nil, nil, build.rnic, "stat", "--socket", d.socket)
		st.wait(time.After(10 * time.Second))
		stat = st.report()
		recv.kill()
	}
	if !send.ok() || !recv.ok() {
		return fmt.Sprintf("%s\n%s\n%s", send.report(), recv.report(), stat)
	}
	mustMatch(t, recv, `(?m)^mckey: joined dgid: ::ffff:`+strings.ReplaceAll(group, ".", `\.`)+` mlid 0x0 sl 0$`,
		`(?m)^receiving data transfers$`, `(?m)^data transfers complete$`)
	mustMatch(t, send, `(?m)^initiating data transfers$`, `(?m)^data transfers complete$`)
	return ""
}
