package verbs

// NamedCounter is one of an engine's counters by name (rdma statistic's
// names where Linux has one) with its value; an engine's Snapshot lists
// them in a fixed order.
type NamedCounter struct {
	Name  string
	Value uint64
}
