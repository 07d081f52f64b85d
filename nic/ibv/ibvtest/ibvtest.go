// The suite's entry points: the pair of devices under test and the lists
// of subtests Run and RunCM run on it.

package ibvtest

import (
	"net/netip"
	"testing"

	"github.com/rnic/rnic/nic/ibv"
)

// Pair is two devices that reach each other; A and B may be the same Device
// (loopback).
type Pair struct {
	A, B ibv.Device
	// AddrA and AddrB are each side's address: its GID is
	// verbs.GIDFromAddr(addr), its GID index Device.GIDIndex(addr).
	AddrA, AddrB netip.Addr
	// IWARP says the devices are iWARP: their QPs connect only through a
	// CM (Run skips), and the wire carries no QP numbers, so a CMConn's
	// RemoteQPN is not checked (rdma_cm reports 0 there).
	IWARP bool
}

// test is one subtest of the suite.
type test struct {
	name string
	run  func(t *testing.T, p Pair)
}

// verbsTests are Run's subtests.
var verbsTests = []test{
	{"RC/Send", testSend},
	{"RC/SendImm", testSendImm},
	{"RC/SendMultiSGE", testSendMultiSGE},
	{"RC/SendInline", testSendInline},
	{"RC/Write", testWrite},
	{"RC/WriteImm", testWriteImm},
	{"RC/Read", testRead},
	{"RC/FetchAdd", testFetchAdd},
	{"RC/CmpSwap", testCmpSwap},
	{"RC/AtomicWrite", testAtomicWrite},
	{"RC/Flush", testFlush},
	{"RC/MultiPacket", testMultiPacket},
	{"RC/QueueDepth", testQueueDepth},
	{"RC/QueryAfterRTS", testQueryAfterRTS},
	{"CQ/Notify", testNotify},
	{"SRQ", testSRQ},
	{"UD/Send", testUDSend},
	{"UD/Multicast", testUDMulticast},
	{"Errors/BadLKey", testBadLKey},
	{"Errors/BadRKey", testBadRKey},
	{"Errors/RecvTooSmall", testRecvTooSmall},
	{"Modify/MissingAttr", testModifyMissingAttr},
	{"Modify/PathMigState", testPathMigState},
	{"Modify/ChangePort", testChangePort},
	{"Modify/PKeyIndex", testPKeyIndex},
	{"Port/QKeyViolCounter", testQKeyViolCounter},
	{"Queues/Full", testFullQueues},
	{"MW/Type1", testMWType1},
	{"MW/Type2B", testMWType2B},
	{"MW/Type2BLocalInv", testMWType2BLocalInv},
	{"MW/Type2BSendInv", testMWType2BSendInv},
	{"MW/DeallocBound", testMWDeallocBound},
	{"MW/BindErr", testMWBindErr},
}

// cmTests are RunCM's subtests.
var cmTests = []test{
	{"Connect", testCMConnect},
	{"Reject", testCMReject},
	{"DisconnectActive", func(t *testing.T, p Pair) { testCMDisconnect(t, p, true) }},
	{"DisconnectPassive", func(t *testing.T, p Pair) { testCMDisconnect(t, p, false) }},
}

// Run runs every manually connected test (RC and UD QPs brought to RTS with
// Modify, as ibv_rc_pingpong does) as subtests. It is for RoCE devices;
// iWARP QPs connect only through a CM, so on a Pair marked IWARP every
// subtest skips. open is called once per subtest.
func Run(t *testing.T, open func(t *testing.T) Pair) {
	runAll(t, verbsTests, false, open)
}

// RunCM runs the rdma_cm tests; both devices must implement
// ibv.ConnManager.
func RunCM(t *testing.T, open func(t *testing.T) Pair) {
	runAll(t, cmTests, true, open)
}

func runAll(t *testing.T, tests []test, cmSuite bool, open func(t *testing.T) Pair) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := open(t)
			if p.A == nil || p.B == nil || !p.AddrA.IsValid() || !p.AddrB.IsValid() {
				t.Fatalf("open returned an incomplete Pair %+v", p)
			}
			if p.IWARP && !cmSuite {
				t.Skip("iWARP: QPs connect only through a CM (RunCM)")
			}
			tc.run(t, p)
		})
	}
}
