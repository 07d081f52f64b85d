// Package view puts rnicd's NICs into the system as a kernel driver would,
// for the programs rnic exec runs: /dev/infiniband/uverbsN and rdma_cm,
// /sys/class/infiniband/<dev>/ and /sys/class/infiniband_verbs/, and a
// network interface (not lo, up) carrying each NIC's addresses. UCX,
// libfabric's verbs provider, Open MPI and pyverbs look for these besides
// the libibverbs ABI.
//
// The view is a set of namespaces: a user namespace mapping the caller's
// uid and gid to themselves (none as root), a mount namespace where tmpfs
// "shadows" of /dev and /sys/class hold the originals plus the devices,
// and, when a NIC's address is on no interface of the host but loopback,
// a network namespace with one TAP per NIC. Nothing outside changes.
//
// One holder process per (uid, rnicd socket) makes the namespaces and
// lives as long as its connection to rnicd (holder.go); every rnic exec of
// that user on that daemon joins it with nsenter (join.go), so a server
// and a client started by two rnic execs reach each other over TCP.
//
// Files: device.go (what the daemon says of its NICs), sysfs.go and
// devfs.go (the trees shown), tree.go (writing a tree), shadow.go (the
// mount technique), mounts.go (which mounts the holder makes), netns.go
// (interfaces), hostaddr.go (addresses the host already carries), hook.go
// (TAP mode), lock.go (the per-user directory and locks), launch.go
// (starting the holder), holder.go (the holder), join.go (entering),
// container.go (the same /sys/class in a container, from rnic cdi's OCI
// hook).
package view
