package server

// SetStatBudget makes stat pages stop after n bytes (one entry each for
// 0) until restore.
func SetStatBudget(n int) (restore func()) {
	old := statBudget.Swap(int64(n))
	return func() { statBudget.Store(old) }
}

// QueueBytes is the queue state a QP of capacity c is charged.
var QueueBytes = queueBytes
