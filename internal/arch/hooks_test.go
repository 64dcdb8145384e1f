package arch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A hook is one place where the module hands a library code of its own to
// call: a func value passed to, or stored in, something of a third-party
// package (or net/http), or a value of one of the module's types converted
// to an interface such a package defines. Whatever the library does with
// it, it may call it in a goroutine of its own, where a panic that nobody
// recovers ends the process.
type hook struct {
	Pkg    string // module-relative package
	Func   string // the enclosing function ("(*Host).Open"), or "init"
	Target string // what receives it: "mcp.(*Server).AddReceivingMiddleware", "a2asrv.AgentExecutor"
}

func (h hook) String() string { return h.Pkg + " | " + h.Func + " | " + h.Target }

type exported struct {
	ImportPath string
	Export     string
	Dir        string
	GoFiles    []string
	Standard   bool
}

// scanHooks type-checks every package of the module (non-test files, this
// platform's build) against its dependencies' export data and returns
// every hook, sorted, without repeats.
func scanHooks(t *testing.T) []hook {
	t.Helper()
	goBin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("the go command is needed to list the packages: %v", err)
		}
	}
	cmd := exec.Command(goBin, "list", "-deps", "-export", "-json=ImportPath,Export,Dir,GoFiles,Standard", module+"/...")
	cmd.Dir = moduleRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []exported
	exports := map[string]string{}
	standard := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p exported
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		standard[p.ImportPath] = p.Standard
		pkgs = append(pkgs, p)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	library := func(p *types.Package) bool {
		if p == nil {
			return false
		}
		path := p.Path()
		if path == module || strings.HasPrefix(path, module+"/") {
			return false
		}
		return !standard[path] || path == "net/http" || path == "net"
	}
	seen := map[hook]bool{}
	for _, p := range pkgs {
		if p.Standard || !strings.HasPrefix(p.ImportPath, module) {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		s := &hookScanner{pkg: strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/"), info: info, library: library, found: seen}
		for _, f := range files {
			s.file(f)
		}
	}
	hooks := make([]hook, 0, len(seen))
	for h := range seen {
		hooks = append(hooks, h)
	}
	slices.SortFunc(hooks, func(a, b hook) int { return strings.Compare(a.String(), b.String()) })
	return hooks
}

type hookScanner struct {
	pkg     string
	info    *types.Info
	library func(*types.Package) bool
	found   map[hook]bool
	fn      string       // the enclosing top-level function
	results *types.Tuple // the results of the innermost enclosing function
}

func (s *hookScanner) file(f *ast.File) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			s.fn = funcName(d)
			s.results = nil
			if obj, ok := s.info.Defs[d.Name].(*types.Func); ok {
				s.results = obj.Type().(*types.Signature).Results()
			}
			ast.Inspect(d, s.node)
		case *ast.GenDecl:
			s.fn = "init"
			ast.Inspect(d, s.node)
		}
	}
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	rt := d.Recv.List[0].Type
	star := ""
	if se, ok := rt.(*ast.StarExpr); ok {
		star, rt = "*", se.X
	}
	if ix, ok := rt.(*ast.IndexExpr); ok {
		rt = ix.X
	}
	if ix, ok := rt.(*ast.IndexListExpr); ok {
		rt = ix.X
	}
	name := "?"
	if id, ok := rt.(*ast.Ident); ok {
		name = id.Name
	}
	if star != "" {
		return "(*" + name + ")." + d.Name.Name
	}
	return name + "." + d.Name.Name
}

func (s *hookScanner) node(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		s.found[hook{s.pkg, s.fn, "go statement"}] = true
	case *ast.CallExpr:
		if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" {
			if f, ok := s.info.Uses[sel.Sel].(*types.Func); ok && f.Pkg() != nil &&
				(f.Pkg().Path() == "sync" || f.Pkg().Path() == "golang.org/x/sync/errgroup") {
				s.found[hook{s.pkg, s.fn, f.Pkg().Name() + ".Go"}] = true
			}
		}
		s.call(n)
	case *ast.CompositeLit:
		s.composite(n)
	case *ast.AssignStmt:
		if len(n.Lhs) == len(n.Rhs) {
			for i, l := range n.Lhs {
				if tv, ok := s.info.Types[l]; ok {
					target, libraryField := s.lhsTarget(l, tv.Type)
					s.handedTo(n.Rhs[i], tv.Type, target, libraryField)
				}
			}
		}
	case *ast.ValueSpec:
		if allBlank(n.Names) {
			return true // var _ I = (*T)(nil): a compile-time check, nothing handed over
		}
		if n.Type != nil {
			if tv, ok := s.info.Types[n.Type]; ok {
				for _, v := range n.Values {
					s.handed(v, tv.Type, typeName(tv.Type))
				}
			}
		}
	case *ast.FuncLit:
		// Its returns convert to its own results.
		outer := s.results
		if sig, ok := s.info.Types[n].Type.(*types.Signature); ok {
			s.results = sig.Results()
		}
		ast.Inspect(n.Body, s.node)
		s.results = outer
		return false
	case *ast.ReturnStmt:
		// A return converts each value to the function's result type.
		if s.results != nil && len(n.Results) == s.results.Len() {
			for i, r := range n.Results {
				t := s.results.At(i).Type()
				s.handed(r, t, typeName(t))
			}
		}
	}
	return true
}

// lhsTarget names the receiver of an assignment: a field of a library
// struct (and true), or the type.
func (s *hookScanner) lhsTarget(l ast.Expr, t types.Type) (string, bool) {
	if se, ok := l.(*ast.SelectorExpr); ok {
		if sel, ok := s.info.Types[se.X]; ok {
			if obj := namedOf(sel.Type); obj != nil && s.library(obj.Pkg()) {
				return strings.TrimPrefix(typeName(sel.Type), "*") + "." + se.Sel.Name, true
			}
		}
	}
	return typeName(t), false
}

func (s *hookScanner) call(c *ast.CallExpr) {
	fun := ast.Unparen(c.Fun)
	tv, ok := s.info.Types[fun]
	if !ok {
		return
	}
	if tv.IsType() { // a conversion: http.HandlerFunc(f)
		if len(c.Args) == 1 {
			s.handed(c.Args[0], tv.Type, typeName(tv.Type))
		}
		return
	}
	sig, ok := tv.Type.Underlying().(*types.Signature)
	if !ok {
		return
	}
	callee := s.calleeName(fun)
	params := sig.Params()
	for i, a := range c.Args {
		var pt types.Type
		switch {
		case sig.Variadic() && i >= params.Len()-1:
			pt = params.At(params.Len() - 1).Type()
			if !c.Ellipsis.IsValid() {
				pt = pt.(*types.Slice).Elem()
			}
		case i < params.Len():
			pt = params.At(i).Type()
		default:
			continue
		}
		target := callee
		if target == "" {
			target = typeName(pt)
		}
		s.handedTo(a, pt, target, callee != "")
	}
}

// calleeName names a called function of a library ("mcp.AddTool",
// "mcp.(*Server).AddReceivingMiddleware"), or "" for any other.
func (s *hookScanner) calleeName(fun ast.Expr) string {
	switch f := fun.(type) {
	case *ast.IndexExpr:
		return s.calleeName(f.X)
	case *ast.IndexListExpr:
		return s.calleeName(f.X)
	}
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		return ""
	}
	obj, ok := s.info.Uses[id].(*types.Func)
	if !ok || !s.library(obj.Pkg()) {
		return ""
	}
	sig := obj.Type().(*types.Signature)
	if r := sig.Recv(); r != nil {
		rt := r.Type()
		star := ""
		if p, ok := rt.(*types.Pointer); ok {
			star, rt = "*", p.Elem()
		}
		name := "?"
		if n := namedOf(rt); n != nil {
			name = n.Name()
		}
		if star != "" {
			return obj.Pkg().Name() + ".(*" + name + ")." + obj.Name()
		}
		return obj.Pkg().Name() + "." + name + "." + obj.Name()
	}
	return obj.Pkg().Name() + "." + obj.Name()
}

func (s *hookScanner) composite(cl *ast.CompositeLit) {
	tv, ok := s.info.Types[cl]
	if !ok {
		return
	}
	t := tv.Type
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		lib := false
		if n := namedOf(t); n != nil && s.library(n.Pkg()) {
			lib = true
		}
		for i, e := range cl.Elts {
			var f *types.Var
			val := e
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				key, _ := kv.Key.(*ast.Ident)
				if key == nil {
					continue
				}
				for j := range u.NumFields() {
					if u.Field(j).Name() == key.Name {
						f = u.Field(j)
					}
				}
				val = kv.Value
			} else if i < u.NumFields() {
				f = u.Field(i)
			}
			if f == nil {
				continue
			}
			target := typeName(f.Type())
			if lib {
				target = typeName(t) + "." + f.Name()
			}
			s.handedTo(val, f.Type(), target, lib)
		}
	case *types.Slice, *types.Array, *types.Map:
		var elem types.Type
		switch u := u.(type) {
		case *types.Slice:
			elem = u.Elem()
		case *types.Array:
			elem = u.Elem()
		case *types.Map:
			elem = u.Elem()
		}
		for _, e := range cl.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Value
			}
			s.handed(e, elem, typeName(elem))
		}
	}
}

// handed records a hook when v, given where a value of type to is
// expected, is ours and to belongs to a library.
func (s *hookScanner) handed(v ast.Expr, to types.Type, target string) {
	s.handedTo(v, to, target, false)
}

// handedTo records a hook when v goes to a library: a func value where
// the receiving end is a library's (libraryEnd) or its type is a
// library's named func type, or a value of one of the module's types
// where a library's interface is expected.
func (s *hookScanner) handedTo(v ast.Expr, to types.Type, target string, libraryEnd bool) {
	v = ast.Unparen(v)
	tv, ok := s.info.Types[v]
	if !ok || tv.IsNil() || tv.Type == nil {
		return
	}
	switch to.Underlying().(type) {
	case *types.Signature:
		if _, ok := tv.Type.Underlying().(*types.Signature); !ok || !s.ownFunc(v) {
			return
		}
		if !libraryEnd {
			n := namedOf(to)
			if n == nil || !s.library(n.Pkg()) {
				return
			}
		}
		s.found[hook{s.pkg, s.fn, target}] = true
	case *types.Interface:
		n := namedOf(to)
		if n == nil || !s.library(n.Pkg()) {
			return
		}
		if p := n.Pkg(); p != nil && !strings.Contains(p.Path(), ".") && !libraryEnd {
			return // net/http's interfaces count where net/http takes them, not in our own fields
		}
		if types.IsInterface(tv.Type) {
			// Already an interface value, converted where it was made;
			// but whatever net/http is handed, it calls from goroutines
			// of its own, so every handler it takes is listed.
			if libraryEnd && n.Pkg().Path() == "net/http" && n.Name() == "Handler" && !strings.HasSuffix(target, ".ServeHTTP") {
				s.found[hook{s.pkg, s.fn, target}] = true
			}
			return
		}
		if own := namedOf(tv.Type); own == nil || own.Pkg() == nil || !strings.HasPrefix(own.Pkg().Path(), module) {
			return
		}
		if target != typeName(to) {
			target += " (" + typeName(to) + ")"
		}
		s.found[hook{s.pkg, s.fn, target}] = true
	}
}

// ownFunc reports whether the func value v may be code of the module: a
// literal, a function or method of the module, what a call of the
// module's returns, a conversion of those, or a variable (whose value may
// be anything). A library's own function, or the option a library's
// constructor returns, is not.
func (s *hookScanner) ownFunc(v ast.Expr) bool {
	switch x := ast.Unparen(v).(type) {
	case *ast.FuncLit:
		return true
	case *ast.Ident:
		return s.ownObject(s.info.Uses[x])
	case *ast.SelectorExpr:
		if sel, ok := s.info.Uses[x.Sel]; ok {
			return s.ownObject(sel)
		}
	case *ast.CallExpr:
		fun := ast.Unparen(x.Fun)
		if tv, ok := s.info.Types[fun]; ok && tv.IsType() && len(x.Args) == 1 {
			return s.ownFunc(x.Args[0])
		}
		return s.calleeName(fun) == ""
	case *ast.IndexExpr:
		return s.ownFunc(x.X)
	}
	return true
}

func (s *hookScanner) ownObject(o types.Object) bool {
	switch o := o.(type) {
	case *types.Func:
		return o.Pkg() != nil && strings.HasPrefix(o.Pkg().Path(), module)
	case *types.Var:
		return true
	}
	return false
}

func allBlank(names []*ast.Ident) bool {
	for _, n := range names {
		if n.Name != "_" {
			return false
		}
	}
	return true
}

// namedOf is the type name of t or of what t points to, or nil.
func namedOf(t types.Type) *types.TypeName {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch n := types.Unalias(t).(type) {
	case *types.Named:
		return n.Obj()
	}
	return nil
}

func typeName(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string { return p.Name() })
}

// hooksDoc is the page that lists every hook, and its markers.
const (
	hooksDoc   = "docs/operations.md"
	hooksBegin = "<!-- library hooks: begin -->"
	hooksEnd   = "<!-- library hooks: end -->"
)

// TestEveryHookIsGuarded keeps docs/operations.md's table of the code we
// hand a library, and of the goroutines we start, equal to what the code
// does: every hook scanHooks finds has a row saying what recovers a panic
// in it or why none can reach it, and no row outlives its hook. A hook
// added without a row, or a row left for a hook gone, fails here; with
// -update the table is rewritten, new rows saying TODO (which fail until
// they say more).
func TestEveryHookIsGuarded(t *testing.T) {
	hooks := scanHooks(t)
	path := filepath.Join(moduleRoot(t), hooksDoc)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	b, e := strings.Index(text, hooksBegin), strings.Index(text, hooksEnd)
	if b < 0 || e < b {
		t.Fatalf("%s has no %s ... %s table", hooksDoc, hooksBegin, hooksEnd)
	}
	guards := map[string]string{}
	for line := range strings.Lines(text[b+len(hooksBegin) : e]) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 4 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "package" {
			continue
		}
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		guards[cells[0]+" | "+cells[1]+" | "+cells[2]] = strings.TrimSpace(strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")[3])
	}
	if *update {
		var out strings.Builder
		out.WriteString(hooksBegin + "\n| package | function | handed to | guard |\n|---|---|---|---|\n")
		for _, h := range hooks {
			g := guards[h.String()]
			if g == "" {
				g = "TODO"
			}
			fmt.Fprintf(&out, "| `%s` | `%s` | `%s` | %s |\n", h.Pkg, h.Func, h.Target, g)
		}
		text = text[:b] + out.String() + text[e:]
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	found := map[string]bool{}
	for _, h := range hooks {
		found[h.String()] = true
		switch g, ok := guards[h.String()]; {
		case !ok:
			t.Errorf("%s: a hook with no row in %s (go test ./internal/arch -run TestEveryHookIsGuarded -update adds one)", h, hooksDoc)
		case g == "" || strings.HasPrefix(g, "TODO"):
			t.Errorf("%s: its row in %s does not say what guards it", h, hooksDoc)
		}
	}
	for k := range guards {
		if !found[k] {
			t.Errorf("%s: a row in %s for a hook the code no longer has", k, hooksDoc)
		}
	}
}
