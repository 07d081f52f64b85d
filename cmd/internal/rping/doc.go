// Package rping is librdmacm's rping on rnic: a client and a server bounce
// a ping buffer through RDMA READ and RDMA WRITE, steered by SENDs of
// struct rping_rdma_info, with rping's flags, output and exit statuses
// (rdma-core's librdmacm/examples/rping.c).
//
// One round, as on the wire (testdata/captures/siw-rping.pcap):
//
//	client                                   server
//	SEND  {start_buf, rkey, size}  ───────▶  (read advert)
//	                               ◀───────  RDMA READ Request
//	READ Response (the ping data)  ───────▶
//	                               ◀───────  SEND "go ahead" (16 zero bytes)
//	SEND  {rdma_buf, rkey, size}   ───────▶  (write advert)
//	                               ◀───────  RDMA WRITE (the data back)
//	                               ◀───────  SEND "go ahead"
//	-V: compare start_buf with rdma_buf
//
// The connection comes from a Connector, the seam rdma_cm is in the real
// tool: listen, accept, connect and disconnect, giving a connected RC QP on
// a verbs device. There is one (cm.go), on any ibv.Device that offers
// rdma_cm (ibv.ConnManager), whatever its transport, chosen by device as
// on real hardware. Over RoCEv2 that is by default the process's own NIC
// with nic/rdmacm, the IB CM's REQ/REP/RTU and DREQ/DREP MADs on QP1 of its
// RoCEv2 engine, as rdma_cm does over rxe (on a kernel UDP socket in the
// embedded mode, on the TAP in the TAP mode); with Config.Device
// (--ib-dev NAME@SOCKET, verbs:NAME) a device opened by its string,
// rnicd's or libibverbs', and that device's rdma_cm. Over iWARP
// (iwarp.go) it is an iWARP NIC of this process (embedded.OpenIWARP, on
// kernel TCP in the embedded mode or on the NIC's own TCP on a TAP) and
// its MPA connection manager, which speaks to the wire as Linux iw_cm and
// siw do: MPA revision 2 with IRD = ORD = 1, no peer-to-peer RTR, no
// private data, CRCs only when the peer asks (or --mpa-crc).
package rping
