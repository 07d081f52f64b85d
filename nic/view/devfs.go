// The /dev entries of the view: a character device per NIC that the
// program may open read-write, as UCX checks before it uses a device
// (uct_ib_device_is_accessible), and rdma_cm.

package view

import "fmt"

// DevInfiniband returns the view's /dev/infiniband: uverbsN for each
// device and rdma_cm, each a bind of nullDev (a character device anyone
// may open read-write: /dev/null).
func DevInfiniband(devs []Device, nullDev string) *Node {
	n := dir()
	for _, d := range devs {
		n.put(fmt.Sprintf("uverbs%d", d.Index), bindOf(nullDev))
	}
	n.put("rdma_cm", bindOf(nullDev))
	return n
}
