package ladder

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// frameInfo is what the HTML page shows for a clicked frame.
type frameInfo struct {
	Decode string `json:"decode"`
	JSON   string `json:"json,omitempty"`
	Spec   string `json:"spec,omitempty"`
	URL    string `json:"url,omitempty"`
	Class  string `json:"class"`
}

// WriteHTML renders the events as one self-contained HTML page: the SVG
// inline, each frame's decode in a JSON block, and a script for the
// interaction (nothing is fetched from the network).
func WriteHTML(w io.Writer, evs []Event, o Options) error {
	evs = selectEvents(evs, o)
	d := newDiagram(evs, o, "data-", true)
	info := make(map[string]frameInfo, len(evs))
	qpSet := map[string]bool{}
	for i := range evs {
		e := &evs[i]
		if e.Mark {
			continue
		}
		info[strconv.Itoa(e.Frame)] = frameInfo{e.Decode, e.JSON, e.Spec, e.SpecURL, e.Class.String()}
		for _, q := range strings.Fields(qps(e)) {
			qpSet[q] = true
		}
	}
	js, err := json.Marshal(info) // map keys are sorted: deterministic
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>")
	b.WriteString(esc("rnic ladder " + o.Title))
	b.WriteString("</title>\n<style>\n" + pageCSS + "</style></head>\n<body>\n<div id=\"bar\">QP filter: <select id=\"qp\"><option value=\"\">all</option>")
	for _, q := range sortedKeys(qpSet) {
		b.WriteString(`<option value="` + q + `">` + q + "</option>")
	}
	b.WriteString("</select> <span class=\"hint\">click an arrow for its decode; click a band to expand it</span></div>\n")
	writeLegend(&b)
	b.WriteString("<div id=\"wrap\"><div id=\"pic\">\n")
	// The diagram scales down to its pane, never up: every lifeline and
	// arrow head stays in view without scrolling sideways.
	d.svg(&b, ` style="max-width:`+num(d.width)+`px"`)
	b.WriteString("</div>\n<div id=\"detail\"><p class=\"hint\">No frame selected.</p></div></div>\n")
	b.WriteString("<script type=\"application/json\" id=\"frames\">")
	// </script> cannot occur: json.Marshal escapes < and >.
	b.Write(js)
	b.WriteString("</script>\n<script>\n" + pageJS + "</script>\n</body></html>\n")
	_, err = w.Write(b.Bytes())
	return err
}

// writeLegend writes the legend as HTML, whose items wrap to the window's
// width, each with its drawing as a small inline SVG.
func writeLegend(b *bytes.Buffer) {
	b.WriteString(`<div id="legend">`)
	for _, it := range legendItems() {
		b.WriteString(`<span class="item"><svg width="40" height="12" viewBox="-2 -6 40 12">` + it.draw + `</svg>` + esc(it.text) + `</span>`)
	}
	b.WriteString("</div>\n")
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s
}

const pageCSS = `body { margin: 0; font-family: sans-serif; background: #fff; color: #111; }
#bar { position: sticky; top: 0; background: #f4f4f4; padding: 6px 10px; border-bottom: 1px solid #ccc; z-index: 1; }
#legend { display: flex; flex-wrap: wrap; gap: 2px 18px; padding: 4px 10px; font-size: 12px; border-bottom: 1px solid #eee; }
#legend .item { display: inline-flex; align-items: center; gap: 4px; white-space: nowrap; }
#wrap { display: flex; align-items: flex-start; }
#pic { flex: 1 1 auto; min-width: 0; overflow-x: hidden; }
#pic svg { display: block; width: 100%; height: auto; }
#detail { flex: 0 0 420px; position: sticky; top: 40px; max-height: 90vh; overflow: auto; padding: 8px 12px; border-left: 1px solid #ccc; font-size: 13px; background: #fff; }
#detail button.close { float: right; }
/* Below a wide screen the panel folds away: it floats over the diagram's
   corner only while a frame is shown, so the diagram has the whole width. */
@media (max-width: 1599px) {
  #detail { position: fixed; right: 8px; bottom: 8px; top: auto; width: min(440px, 60vw); max-height: 55vh; border: 1px solid #999; box-shadow: 0 2px 10px rgba(0,0,0,0.3); }
  #detail:not([data-frame]) { display: none; }
}
#detail pre { white-space: pre-wrap; word-break: break-all; background: #f7f7f7; padding: 6px; }
#detail table { border-collapse: collapse; }
#detail td { border-bottom: 1px solid #eee; padding: 1px 6px; font-family: monospace; vertical-align: top; }
.hint { color: #666; font-size: 12px; }
g.frame, g.bandbox { cursor: pointer; }
g.frame.selected line, g.frame.selected path { stroke-width: 3.5; }
g.frame.selected text.label { text-decoration: underline; }
g.dim { opacity: 0.12; }
@media print { #bar, #detail { display: none; } }
`

// pageJS: click shows a frame's decode; bands expand and collapse (rows
// below move down); the QP filter dims other frames; #frame=N in the URL
// selects frame N when the page loads, #click=N clicks its arrow,
// #qp=0xQQQQQQ sets the QP filter and #expand=all expands every band.
const pageJS = `(function () {
var frames = JSON.parse(document.getElementById('frames').textContent);
var svg = document.querySelector('#pic svg');
var rowH = ` + "40" + `;
function relayout() {
  var y = null, rows = svg.querySelectorAll('g.row');
  for (var i = 0; i < rows.length; i++) {
    var r = rows[i], m = /translate\(0,([0-9.]+)\)/.exec(r.getAttribute('transform'));
    if (y === null) y = parseFloat(m[1]);
    r.setAttribute('transform', 'translate(0,' + y + ')');
    var band = r.querySelector('g.band');
    var h = r.querySelector('g.gap') ? 26 : rowH;
    if (band && band.getAttribute('data-open') === '1') h = rowH * parseInt(band.getAttribute('data-count'), 10);
    y += h;
  }
  var H = y + 40;
  svg.setAttribute('height', H);
  var vb = svg.getAttribute('viewBox').split(' ');
  svg.setAttribute('viewBox', vb[0] + ' ' + vb[1] + ' ' + vb[2] + ' ' + H);
  svg.querySelector('rect').setAttribute('height', H);
  var lanes = svg.querySelectorAll('line.lane');
  for (var j = 0; j < lanes.length; j++) lanes[j].setAttribute('y2', H - 24);
}
function toggle(band, open) {
  band.setAttribute('data-open', open ? '1' : '0');
  band.querySelector('g.bandbox').setAttribute('display', open ? 'none' : 'inline');
  var ms = band.querySelectorAll('g.members g.frame');
  for (var i = 0; i < ms.length; i++) ms[i].setAttribute('display', open ? 'inline' : 'none');
  relayout();
}
function text(tag, s) { var e = document.createElement(tag); e.textContent = s; return e; }
function show(n) {
  var f = frames[n], box = document.getElementById('detail');
  if (!f) return;
  var old = svg.querySelectorAll('g.frame.selected');
  for (var i = 0; i < old.length; i++) old[i].classList.remove('selected');
  var g = document.getElementById('f' + n);
  if (g) {
    g.classList.add('selected');
    var band = g.parentNode && g.parentNode.parentNode && g.parentNode.parentNode.parentNode;
    if (band && band.classList && band.classList.contains('band') && band.getAttribute('data-open') !== '1') toggle(band, true);
  }
  box.innerHTML = '';
  box.setAttribute('data-frame', n);
  var close = text('button', '\u00d7');
  close.className = 'close'; close.title = 'close';
  close.addEventListener('click', function () { box.removeAttribute('data-frame'); box.innerHTML = ''; });
  box.appendChild(close);
  box.appendChild(text('h3', 'Frame ' + n + ' (' + f['class'] + ')'));
  box.appendChild(text('pre', f.decode)).id = 'decode';
  if (f.spec) {
    var p = document.createElement('p'), a = text('a', f.spec);
    a.href = f.url; a.target = '_blank'; a.rel = 'noopener';
    p.appendChild(text('span', 'Defined in: ')); p.appendChild(a); box.appendChild(p);
  }
  if (f.json) {
    var lines = f.json.split('\n');
    for (var k = 0; k < lines.length; k++) {
      var o = JSON.parse(lines[k]), t = document.createElement('table');
      Object.keys(o).forEach(function (key) {
        var v = o[key], tr = document.createElement('tr');
        tr.appendChild(text('td', key));
        tr.appendChild(text('td', typeof v === 'object' ? JSON.stringify(v) : String(v)));
        t.appendChild(tr);
      });
      box.appendChild(t);
    }
  }
}
svg.addEventListener('click', function (ev) {
  var g = ev.target.closest('g.frame, g.bandbox');
  if (!g) return;
  if (g.classList.contains('bandbox')) { toggle(g.parentNode, true); return; }
  var band = g.closest('g.band');
  if (band && ev.altKey) { toggle(band, false); return; }
  show(g.getAttribute('data-frame'));
});
document.getElementById('qp').addEventListener('change', function () {
  var q = this.value, fs = svg.querySelectorAll('g.frame');
  for (var i = 0; i < fs.length; i++) {
    var own = (' ' + fs[i].getAttribute('data-qps') + ' ').indexOf(' ' + q + ' ') >= 0;
    fs[i].classList.toggle('dim', q !== '' && !own);
  }
});
function fromHash() {
  var h = location.hash;
  if (/expand=all/.test(h)) { var bs = svg.querySelectorAll('g.band'); for (var i = 0; i < bs.length; i++) toggle(bs[i], true); }
  var q = /qp=(0x[0-9a-f]+)/.exec(h), sel = document.getElementById('qp');
  if (q) { sel.value = q[1]; sel.dispatchEvent(new Event('change')); }
  var m = /frame=([0-9]+)/.exec(h);
  if (m) show(m[1]);
  // #click=N clicks frame N's arrow as a user would (a band member's
  // band first), through the same handler: what the browser test uses.
  var c = /click=([0-9]+)/.exec(h), g = c && document.getElementById('f' + c[1]);
  if (g) {
    var b = g.closest('g.band');
    if (b && b.getAttribute('data-open') !== '1') click(b.querySelector('g.bandbox rect'));
    click(g.querySelector('line, path'));
  }
}
// #measure writes where the lifelines and arrows lie against the visible
// part of the diagram's pane into <pre id="measure"> (the browser test
// reads it): the layout's promise is that they are in view.
function measure() {
  var pane = document.getElementById('pic').getBoundingClientRect();
  var left = Math.max(pane.left, 0), right = Math.min(pane.right, window.innerWidth);
  var xs = function (sel) {
    var out = [], els = svg.querySelectorAll(sel);
    for (var i = 0; i < els.length; i++) {
      if (els[i].closest('[display="none"]')) continue;
      var r = els[i].getBoundingClientRect(); out.push([r.left, r.right]);
    }
    return out;
  };
  var lg = document.getElementById('legend'), pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify({left: left, right: right, lanes: xs('line.lane'),
    arrows: xs('g.frame line, g.frame path'), pageOverflow: document.documentElement.scrollWidth - window.innerWidth,
    legendOverflow: lg.scrollWidth - lg.clientWidth});
  document.body.appendChild(pre);
}
function click(el) { el.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window})); }
window.addEventListener('hashchange', fromHash);
fromHash();
if (/measure/.test(location.hash)) measure();
})();
`
