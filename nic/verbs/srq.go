// A shared receive queue's attributes (ibv_query_srq, ibv_modify_srq).

package verbs

// SRQAttr are an SRQ's attributes (struct ibv_srq_attr).
type SRQAttr struct {
	MaxWR  int // WQEs the SRQ holds
	MaxSGE int // SGEs per WQE (fixed at creation)
	Limit  int // armed limit, 0 when not armed
}

// SRQAttrMask selects what ModifySRQ changes (enum ibv_srq_attr_mask).
type SRQAttrMask uint8

// SRQ attribute mask bits.
const (
	SRQMaxWR SRQAttrMask = 1 << 0 // resize (IBV_SRQ_MAX_WR)
	SRQLimit SRQAttrMask = 1 << 1 // arm the limit (IBV_SRQ_LIMIT)
)
