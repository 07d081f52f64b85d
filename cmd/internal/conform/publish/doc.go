// Package publish is `rnic conform report`: it turns the JSON of conform
// runs (and the captures they kept) into a report a protocol engineer
// reads first — a Markdown file and a self-contained HTML page.
//
// Per DUT (its device, driver kind, host kernel and the run's date) the
// report counts the verdicts, then lists each departure from the spec
// once, grouped by root cause (Groups): a crash of the DUT's host by the
// kernel line it logged, with the log; a finding (one cause that many
// cases met on the way to their own rules, such as a Terminate laid out
// wrongly) with every rule it touched and each one's own verdict; each
// FAILed rule; each known deviation. Each group names the spec section
// it breaks with a one-line paraphrase (a case's title is that
// paraphrase), the evidence (frame numbers and bytes), a ladder picture
// of the frames of one case that shows it, and the command lines that
// run that case again. Cases that could not run are listed apart, with
// why.
//
// The ladder pictures are drawn by a function the caller passes
// (Options.Ladder; rnic's is cmd/internal/ladder's SVG), so that this
// package depends on the conform results alone. The HTML inlines them;
// the Markdown refers to them as SVG files written beside it.
package publish
