// Package embedded assembles a whole rnic NIC: a link, the RoCEv2 engine
// on it, and the verbs device on top, with an optional pcap tee and trace.
// Open gives the embedded (default) mode: kernel UDP sockets on an address
// of the host, no root, no TAP. NewNIC does the same on any link, so tests
// and the simulator build NICs the same way. OpenIWARP assembles an iWARP
// NIC the same way on TCP streams (kernel TCP by default), its device
// carrying its own rdma_cm (MPA), since iWARP QPs connect only through it.
package embedded
