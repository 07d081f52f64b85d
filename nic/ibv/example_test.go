package ibv_test

import (
	"fmt"
	"log"
	"net/netip"

	"github.com/rnic/rnic/nic"
	"github.com/rnic/rnic/nic/embedded"
	"github.com/rnic/rnic/nic/ibv"
	_ "github.com/rnic/rnic/nic/passthrough"  // verbs:NAME: libibverbs devices (a build with -tags verbs)
	_ "github.com/rnic/rnic/nic/rnicd/client" // NAME@SOCKET: the NICs an rnicd serves
)

// A program opens a device by its string. Each backend registers itself
// when linked: without the blank imports above, ibv.Open of
// rnic0@/run/rnic/rnicd.sock or verbs:mlx5_0 fails with ibv.ErrNoBackend.
// (Compiled, not run: it needs a running rnicd.)
func ExampleOpen() {
	spec, err := ibv.ParseSpec("rnic0@/run/rnic/rnicd.sock")
	if err != nil {
		log.Fatal(err)
	}
	dev, err := ibv.Open(spec)
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	port, err := dev.QueryPort(1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dev.Name(), port.ActiveMTU.Bytes(), dev.GIDs())
}

// The same on real hardware (or Linux rxe/siw) through libibverbs, in a
// program built with -tags verbs. (Compiled, not run: it needs a device.)
func ExampleOpen_verbs() {
	spec, err := ibv.ParseSpec("verbs:mlx5_0")
	if err != nil {
		log.Fatal(err)
	}
	dev, err := ibv.Open(spec)
	if err != nil {
		log.Fatal(err) // without -tags verbs: "rebuild with -tags verbs"
	}
	defer dev.Close()
	fmt.Println(dev.Name(), dev.Query().MaxQP)
}

// The in-process NIC is built, not opened: embedded.Open (or a TAP-mode
// NIC, or a NIC on the simulated link) gives the same ibv.Device.
func Example_inProcess() {
	n, err := embedded.Open(embedded.UDPConfig{Name: "rnic0", Addr: netip.MustParseAddr("127.0.0.44")})
	if err != nil {
		log.Fatal(err)
	}
	dev := n.Verbs(nic.IBVOptions{}) // closing dev closes the NIC
	defer dev.Close()
	port, err := dev.QueryPort(1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dev.Name(), port.ActiveMTU.Bytes(), dev.GIDs())
	// Output: rnic0 1024 [::ffff:127.0.0.44]
}
