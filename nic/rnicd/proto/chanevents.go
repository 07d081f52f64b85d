// Completion channels: completion events are
// signalled per completion channel, not per CQ, so that a CQ costs no
// descriptor of its own on either side (real libibverbs costs one per
// ibv_create_comp_channel and none per CQ; one eventfd per CQ made a C
// program under a soft RLIMIT_NOFILE of 256 fail at about 238 CQs).
//
// A channel is a wake-up socket (below) and an event set: a two-level bitmap with the
// layout of the session doorbell (bell.go), written the other way round.
// Each CQ created on a channel gets a slot of the channel's set. The
// daemon's mover, firing an armed CQ, sets the CQ's slot (leaf bit, then
// summary bit, atomic OR) and then sends a byte on the channel's socket.
// The client, woken through poll(2) or a read of the socket, swaps each
// summary word with 0 and each leaf word a set summary bit names with 0,
// and queues one event per slot found (the arm is one-shot, so a slot is
// set at most once per arm and no event is lost or doubled). A slot set
// after the client swapped its summary word sets the summary bit again
// and sends a byte again. Finding the fired CQs costs
// BellSummaryWords loads plus one per fired leaf word, whatever the
// number of CQs on the channel.
//
// The daemon only ORs into the set and never reads it, so a client
// scribbling on it confuses only itself.
//
// The socket is a Unix stream socketpair: the daemon keeps one end and
// sends the client the other, so the two are distinct open files and the
// client's fcntl of its end (clearing O_NONBLOCK) never makes the daemon's
// sends wait. The daemon sends without waiting and drops a byte the full
// socket will not take: the bytes already in it wake the client. A client
// reads the bytes it finds before it takes the set, never after, so a slot
// set after its take comes with a byte it has not read. The doorbell
// (bell.go) is the same the other way round.

package proto

// Channel event set geometry: the doorbell's.
//
//rnicd:cheader
const (
	// MaxChannelCQs is how many CQs one completion channel may hold.
	MaxChannelCQs = MaxBells
	// ChannelAreaLen is the size of a channel's event set.
	ChannelAreaLen = BellAreaLen
)

// ChannelEvents is a view of a completion channel's event set.
type ChannelEvents struct{ set *SessionBell }

// NewChannelEvents returns the view of mem, which must be at least
// ChannelAreaLen bytes and 8-byte aligned (a mapping is).
func NewChannelEvents(mem []byte) (*ChannelEvents, error) {
	b, err := NewSessionBell(mem)
	if err != nil {
		return nil, err
	}
	return &ChannelEvents{set: b}, nil
}

// Fire sets slot i (the daemon's side, before it sends on the channel's
// socket); it reports false for an i out of range.
func (e *ChannelEvents) Fire(i uint32) bool { return e.set.Ring(i) }

// Take clears every slot set and calls f with each (the client's side,
// after reading the bytes on the channel's socket).
func (e *ChannelEvents) Take(f func(i uint32)) { e.set.Take(f) }

// Completion channel ops.
const (
	// OpCreateChannel creates a completion channel (Empty). The reply
	// (CreateChannelReply) carries the place of its event set in the
	// session's ring arena and, after the chunk's memfd when it is sent,
	// the client's end of the channel's socket.
	OpCreateChannel Op = 0x0024
	// OpDestroyChannel destroys a channel (Handle); the daemon refuses
	// while CQs are on it.
	OpDestroyChannel Op = 0x0025
	// OpCreateCQOn creates a CQ on a channel, or on none (Channel 0)
	// (CreateCQOnReq); the reply (CreateCQOnReply) carries no descriptor:
	// the CQ's events come through its Slot of the channel's event set.
	OpCreateCQOn Op = 0x0026
)

func init() {
	registerOps([]opDecl{
		{OpCreateChannel, "CREATE_CHANNEL", Bodies{func() Message { return new(Empty) }, func() Message { return new(CreateChannelReply) }}},
		{OpDestroyChannel, "DESTROY_CHANNEL", Bodies{func() Message { return new(Handle) }, func() Message { return new(Empty) }}},
		{OpCreateCQOn, "CREATE_CQ_ON", Bodies{func() Message { return new(CreateCQOnReq) }, func() Message { return new(CreateCQOnReply) }}},
	})
}

// CreateChannelReply names the channel and places its event set
// (ChannelAreaLen bytes) in the session's arena.
type CreateChannelReply struct {
	Channel uint32
	Place   RingPlace
}

func (m *CreateChannelReply) Encode(w *Writer) { w.U32(m.Channel); m.Place.Encode(w) }
func (m *CreateChannelReply) Decode(r *Reader) { m.Channel = r.U32(); m.Place.Decode(r) }

// CreateCQOnReq creates a CQ of CQE entries on Channel (0: none).
type CreateCQOnReq struct{ CQE, Channel uint32 }

func (m *CreateCQOnReq) Encode(w *Writer) { w.U32(m.CQE); w.U32(m.Channel) }
func (m *CreateCQOnReq) Decode(r *Reader) { m.CQE = r.U32(); m.Channel = r.U32() }

// CreateCQOnReply is the CQ (CreateCQReply) and the CQ's
// slot in its channel's event set (meaningless without a channel).
type CreateCQOnReply struct {
	CreateCQReply
	Slot uint32
}

func (m *CreateCQOnReply) Encode(w *Writer) {
	m.CreateCQReply.Encode(w)
	w.U32(m.Slot)
}

func (m *CreateCQOnReply) Decode(r *Reader) {
	m.CreateCQReply.Decode(r)
	m.Slot = r.U32()
}
