// Collecting the constants the header carries, in declaration order.

package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"strings"
	"unicode"
)

// directive marks a const block (in its doc comment) whose constants all
// go to the header.
const directive = "//rnicd:cheader"

// enumTypes are the protocol's named types whose every constant goes to
// the header, each as a C enum of its own.
var enumTypes = []string{"Kind", "Op", "Status"}

// cconst is one constant as the header writes it.
type cconst struct {
	name    string // the C name
	goName  string
	value   constant.Value
	comment string // one line, may be empty
}

// cblock is a group of constants with the doc comment of its Go block.
type cblock struct {
	doc    string
	file   string
	consts []cconst
}

// collected is everything the header carries.
type collected struct {
	enums  map[string][]cconst // by Go type name
	blocks []cblock
}

func collect(p *pkgInfo) (*collected, error) {
	c := &collected{enums: map[string][]cconst{}}
	for i, f := range p.files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			if err := c.addDecl(p, p.names[i], g); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

func (c *collected) addDecl(p *pkgInfo, file string, g *ast.GenDecl) error {
	marked := hasDirective(g.Doc)
	var blk cblock
	if marked {
		blk = cblock{doc: docText(g.Doc), file: file}
	}
	for _, s := range g.Specs {
		vs := s.(*ast.ValueSpec)
		for _, id := range vs.Names {
			if id.Name == "_" {
				continue
			}
			obj, ok := p.info.Defs[id].(*types.Const)
			if !ok {
				return fmt.Errorf("%s: %s is no constant", file, id.Name)
			}
			k := cconst{name: "RNICD_" + snake(id.Name), goName: id.Name, value: obj.Val(), comment: specComment(vs)}
			if k.value.Kind() != constant.Int {
				if marked {
					return fmt.Errorf("%s: %s is not an integer constant, which a C header cannot carry", file, id.Name)
				}
				continue
			}
			if t := enumType(obj); t != "" {
				c.enums[t] = append(c.enums[t], k)
			} else if marked {
				blk.consts = append(blk.consts, k)
			}
		}
	}
	if marked {
		c.blocks = append(c.blocks, blk)
	}
	return nil
}

// enumType returns the name of obj's type if it is one of enumTypes.
func enumType(obj *types.Const) string {
	n, ok := obj.Type().(*types.Named)
	if !ok || n.Obj().Pkg() != obj.Pkg() {
		return ""
	}
	for _, t := range enumTypes {
		if n.Obj().Name() == t {
			return t
		}
	}
	return ""
}

func hasDirective(g *ast.CommentGroup) bool {
	if g == nil {
		return false
	}
	for _, c := range g.List {
		if strings.TrimSpace(c.Text) == directive {
			return true
		}
	}
	return false
}

// docText is a doc comment's text without its directives.
func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.TrimSpace(g.Text())
}

// specComment is a constant's comment on one line: its doc comment, else
// its line comment.
func specComment(vs *ast.ValueSpec) string {
	t := docText(vs.Doc)
	if t == "" {
		t = docText(vs.Comment)
	}
	return strings.Join(strings.Fields(t), " ")
}

// snake turns a Go identifier into upper snake case, keeping acronyms
// whole, plural ones too: ringSQProd → RING_SQ_PROD, MaxFDs → MAX_FDS,
// OpCMListenUD → OP_CM_LISTEN_UD.
func snake(id string) string {
	// The verbs keys are one word each: InvRKey → INV_RKEY.
	for _, k := range []string{"LKey", "RKey", "QKey", "PKey"} {
		id = strings.ReplaceAll(id, k, k[:1]+"key")
	}
	r := []rune(id)
	var b strings.Builder
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && startsWord(r, i) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(c))
	}
	return b.String()
}

// startsWord says whether the upper-case r[i] begins a word: after a
// lower-case letter or a digit, or as the last capital of an acronym
// followed by a lower-case word (but not by a plural s).
func startsWord(r []rune, i int) bool {
	prev := r[i-1]
	if unicode.IsLower(prev) || unicode.IsDigit(prev) {
		return true
	}
	if i+1 >= len(r) || !unicode.IsLower(r[i+1]) {
		return false
	}
	plural := r[i+1] == 's' && (i+2 == len(r) || unicode.IsUpper(r[i+2]))
	return !plural
}
