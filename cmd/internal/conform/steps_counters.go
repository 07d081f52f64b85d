// Steps on the DUT's port counters: a drop the DUT counts must show in
// its counter, where the DUT has one of that name (a DUT without it is
// judged on the drop alone: counters are not named alike on all devices).

package conform

import "fmt"

// counterVar names the value of a DUT counter SnapCounter kept.
func counterVar(name string) string { return "counter:" + name }

// dutCounter returns the DUT's counter of that name, false if it has none.
func dutCounter(r *Run, name string) (uint64, bool, error) {
	cs, err := r.Agent.Counters()
	if err != nil {
		return 0, false, err
	}
	for _, c := range cs {
		if c.Name == name {
			return c.Value, true, nil
		}
	}
	return 0, false, nil
}

// SnapCounter keeps the DUT's counter Name, if it has one, for
// CounterRose.
type SnapCounter struct{ Name string }

func (s SnapCounter) Do(r *Run) error {
	v, ok, err := dutCounter(r, s.Name)
	if ok {
		r.Vars[counterVar(s.Name)] = v
	}
	return err
}

func (s SnapCounter) String() string { return "read the DUT's counter " + s.Name }

// CounterRose: the DUT's counter Name grew since SnapCounter, when the
// DUT has it (a DUT without it is not judged on it).
type CounterRose struct{ Name string }

func (c CounterRose) Do(r *Run) error {
	before, ok := r.Vars[counterVar(c.Name)].(uint64)
	if !ok {
		r.Note("no %s counter", c.Name)
		return nil
	}
	v, _, err := dutCounter(r, c.Name)
	if err != nil {
		return err
	}
	if v <= before {
		return fmt.Errorf("the DUT's %s counter stayed at %d: the drop was not counted", c.Name, v)
	}
	r.Note("%s %d→%d", c.Name, before, v)
	return nil
}

func (c CounterRose) String() string { return "the DUT counted the drop in " + c.Name }
