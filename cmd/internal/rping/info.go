// struct rping_rdma_info, rping's control message, carried by every SEND:
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         buf (be64)                            |
//	+                                                               +
//	|                                                               |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         rkey (be32)                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//	|                         size (be32)                           |
//	+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The client fills it with the address, rkey and length of a buffer; the
// server's "go ahead" SENDs carry 16 zero bytes (rping never fills its
// send buffer).

package rping

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrBogus: a received message is not an rping_rdma_info.
// rping says "Received bogus data, size N".
var ErrBogus = errors.New("rping: received bogus data")

// InfoLen is the size of struct rping_rdma_info; rping takes a receive of
// any other length as "bogus data".
const InfoLen = 16

// Info is a decoded rping_rdma_info.
type Info struct {
	Addr uint64 // buf: the buffer's address (the region's tagged offset)
	RKey uint32
	Size uint32
}

// Put encodes i into b, which must hold InfoLen bytes.
func (i Info) Put(b []byte) {
	_ = b[InfoLen-1]
	binary.BigEndian.PutUint64(b[0:], i.Addr)
	binary.BigEndian.PutUint32(b[8:], i.RKey)
	binary.BigEndian.PutUint32(b[12:], i.Size)
}

// ParseInfo decodes a received message; anything but InfoLen bytes is
// refused, as rping's server_recv and client_recv do.
func ParseInfo(b []byte) (Info, error) {
	if len(b) != InfoLen {
		return Info{}, fmt.Errorf("%w, size %d", ErrBogus, len(b))
	}
	return Info{
		Addr: binary.BigEndian.Uint64(b[0:]),
		RKey: binary.BigEndian.Uint32(b[8:]),
		Size: binary.BigEndian.Uint32(b[12:]),
	}, nil
}
