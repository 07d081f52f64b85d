package iwconform

// Cases returns the iWARP suite in order: MPA setup, DDP tagged and
// untagged, RDMAP, atomics.
func Cases() []Case {
	var all []Case
	for _, f := range []func() []Case{mpaCases, rtrCases, crcCases, taggedCases, untaggedCases, readCases, readSinkCases, terminateCases, atomicCases} {
		all = append(all, f()...)
	}
	return all
}
