package docsnippets

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Package is a Go package generated from snippets.
type Package struct {
	// Dir is the package's directory name, unique among the packages
	// Generate returns.
	Dir string
	// Name is the package clause's name.
	Name string
	// Files maps a file name to its content.
	Files map[string][]byte
	// Snippets are the snippets the package was built from.
	Snippets []Snippet
}

// Imports maps a package name, as snippets use it (server.New), to the
// import path it stands for.
type Imports map[string]string

// Generate turns the snippets that are not skipped into packages: one per
// group of a file, and one per ungrouped snippet. Each file carries //line
// directives, so that the compiler's messages name the Markdown file and
// line. Declarations and statements get the imports their package names
// need from imports; a complete file is left as it is. Generate fails on
// a snippet that parses neither as a file, nor as declarations, nor as
// statements, and on a package name that imports does not know; it then
// still returns the packages of the other snippets.
func Generate(snips []Snippet, imports Imports) ([]Package, error) {
	type key struct{ file, group string }
	var (
		order  []key
		groups = map[key][]Snippet{}
	)
	for i, s := range snips {
		if s.Skip != "" {
			continue
		}
		k := key{s.File, s.Group}
		if s.Group == "" {
			k.group = "#" + strconv.Itoa(i)
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], s)
	}
	var (
		pkgs []Package
		errs []string
		dirs = map[string]int{}
	)
	for _, k := range order {
		p, err := generateOne(groups[k], imports)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		p.Dir = dirName(k.file, groups[k])
		if n := dirs[p.Dir]; n > 0 {
			p.Dir += "_" + strconv.Itoa(n)
		}
		dirs[p.Dir]++
		pkgs = append(pkgs, p)
	}
	if len(errs) > 0 {
		return pkgs, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return pkgs, nil
}

// notIdent matches runs of characters that cannot be in a directory name
// that is also an import path element.
var notIdent = regexp.MustCompile(`[^a-z0-9]+`)

// dirName names the directory of the package built from snips of file.
func dirName(file string, snips []Snippet) string {
	base := strings.TrimSuffix(strings.ToLower(file), ".md")
	name := strings.Trim(notIdent.ReplaceAllString(base, "_"), "_")
	if g := snips[0].Group; g != "" {
		return name + "_" + strings.Trim(notIdent.ReplaceAllString(strings.ToLower(g), "_"), "_")
	}
	return name + "_" + strconv.Itoa(snips[0].Line)
}

// kind is how a snippet is built.
type kind int

const (
	fullFile kind = iota
	declarations
	statements
)

// parsed is one snippet, classified.
type parsed struct {
	s    Snippet
	kind kind
	pkg  string    // the package clause of a full file
	file *ast.File // the snippet as parsed, for its names
}

func generateOne(snips []Snippet, imports Imports) (Package, error) {
	var ps []parsed
	pkgName := ""
	for _, s := range snips {
		p, err := classify(s)
		if err != nil {
			return Package{}, err
		}
		if p.kind == fullFile {
			if pkgName != "" && pkgName != p.pkg {
				return Package{}, fmt.Errorf("%s:%d: package %s, but the group's other files are package %s", s.File, s.Line, p.pkg, pkgName)
			}
			pkgName = p.pkg
		}
		ps = append(ps, p)
	}
	if pkgName == "" {
		pkgName = "snippet"
	}
	// The package-level names of the group, which are not package
	// qualifiers wherever they are used. (Imports are not among them:
	// they belong to one file.)
	declared := map[string]bool{}
	for _, p := range ps {
		for _, d := range p.file.Decls {
			for _, n := range declNames(d) {
				declared[n] = true
			}
		}
	}
	pkg := Package{Name: pkgName, Files: map[string][]byte{}, Snippets: snips}
	var errs []string
	for i, p := range ps {
		var src []byte
		switch p.kind {
		case fullFile:
			src = []byte(lineDirective(p.s) + p.s.Code + "\n")
		default:
			body := p.s.Code
			if p.kind == statements {
				body = wrapStatements(p)
			}
			own := map[string]bool{} // names this snippet imports itself
			for _, im := range p.file.Imports {
				own[importName(im)] = true
			}
			var paths []string
			for _, name := range qualifiers(p, declared) {
				if own[name] {
					continue
				}
				ip, ok := imports[name]
				if !ok {
					errs = append(errs, fmt.Sprintf("%s:%d: %s is declared neither in the snippet nor in its group, and is not a package of this module or the standard library (a package from elsewhere must be imported by the snippet)", p.s.File, p.s.Line, name))
					continue
				}
				if ip == "" {
					errs = append(errs, fmt.Sprintf("%s:%d: package name %q is ambiguous; import it in the snippet", p.s.File, p.s.Line, name))
					continue
				}
				paths = append(paths, importSpec(name, ip))
			}
			var b bytes.Buffer
			fmt.Fprintf(&b, "package %s\n\n", pkgName)
			if len(paths) > 0 {
				fmt.Fprintf(&b, "import (\n\t%s\n)\n\n", strings.Join(paths, "\n\t"))
			}
			if p.kind == statements {
				b.WriteString(body)
			} else {
				b.WriteString(lineDirective(p.s))
				b.WriteString(body)
				b.WriteString("\n")
			}
			src = b.Bytes()
		}
		pkg.Files[fmt.Sprintf("snippet%03d.go", i)] = src
	}
	if len(errs) > 0 {
		return Package{}, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return pkg, nil
}

// classify parses s as a full file, as declarations or as statements, in
// that order.
func classify(s Snippet) (parsed, error) {
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, "", s.Code, parser.PackageClauseOnly); err == nil {
		f, err = parser.ParseFile(fset, "", s.Code, parser.ParseComments)
		if err != nil {
			return parsed{}, parseError(s, err, 0)
		}
		return parsed{s: s, kind: fullFile, pkg: f.Name.Name, file: f}, nil
	}
	const declHead = "package p\n"
	f, declErr := parser.ParseFile(fset, "", declHead+s.Code, 0)
	if declErr == nil {
		return parsed{s: s, kind: declarations, file: f}, nil
	}
	if s.Hidden {
		return parsed{}, parseError(s, declErr, 1)
	}
	const stmtHead = "package p\nfunc _() error {\n"
	f, err := parser.ParseFile(fset, "", stmtHead+s.Code+"\n}\n", 0)
	if err != nil {
		// Report the error of the reading closer to the code: a
		// snippet that starts with a declaration keyword meant
		// declarations.
		if startsWithDecl(s.Code) {
			return parsed{}, parseError(s, declErr, 1)
		}
		return parsed{}, parseError(s, err, 2)
	}
	return parsed{s: s, kind: statements, file: f}, nil
}

// startsWithDecl reports whether code's first word is a declaration
// keyword other than var and const, which statements may start with too.
func startsWithDecl(code string) bool {
	for _, line := range strings.Split(code, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		w, _, _ := strings.Cut(t, " ")
		return w == "func" || w == "type" || w == "import"
	}
	return false
}

// parsePos matches the position that starts a go/parser error.
var parsePos = regexp.MustCompile(`^(\d+):(\d+): (.*)`)

// parseError renders a parse error of s, whose code was parsed after
// head extra lines, at its Markdown line.
func parseError(s Snippet, err error, head int) error {
	msg := err.Error()
	if m := parsePos.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return fmt.Errorf("%s:%d: %s", s.File, s.Line+n-1-head, m[3])
	}
	return fmt.Errorf("%s:%d: %v", s.File, s.Line, err)
}

// lineDirective makes the next line of a generated file s's first line.
func lineDirective(s Snippet) string {
	return fmt.Sprintf("//line %s:%d\n", s.File, s.Line)
}

// wrapStatements wraps a statements snippet in a function. The variables
// it declares at the top level are marked used, and a body that does not
// end in a return gets "return nil".
func wrapStatements(p parsed) string {
	var fn *ast.FuncDecl
	for _, d := range p.file.Decls {
		if f, ok := d.(*ast.FuncDecl); ok {
			fn = f
		}
	}
	var uses []string
	seen := map[string]bool{}
	use := func(id *ast.Ident) {
		if id != nil && id.Name != "_" && !seen[id.Name] {
			seen[id.Name] = true
			uses = append(uses, "_ = "+id.Name)
		}
	}
	endsInReturn := false
	for _, st := range fn.Body.List {
		endsInReturn = false
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					id, _ := e.(*ast.Ident)
					use(id)
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, sp := range g.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						use(id)
					}
				}
			}
		case *ast.ReturnStmt:
			endsInReturn = true
		}
	}
	var b strings.Builder
	b.WriteString("func _() error {\n")
	b.WriteString(lineDirective(p.s))
	b.WriteString(p.s.Code)
	b.WriteString("\n")
	for _, u := range uses {
		b.WriteString(u + "\n")
	}
	if !endsInReturn {
		b.WriteString("return nil\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// declNames returns the package-level names a declaration introduces.
func declNames(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			names = append(names, d.Name.Name)
		}
	case *ast.GenDecl:
		for _, sp := range d.Specs {
			switch sp := sp.(type) {
			case *ast.TypeSpec:
				names = append(names, sp.Name.Name)
			case *ast.ValueSpec:
				for _, id := range sp.Names {
					names = append(names, id.Name)
				}
			}
		}
	}
	return names
}

// importName is the name an import spec binds.
func importName(im *ast.ImportSpec) string {
	if im.Name != nil {
		return im.Name.Name
	}
	p, _ := strconv.Unquote(im.Path.Value)
	return pathName(p)
}

// pathName is the package name an import path conventionally has.
func pathName(p string) string {
	base := path.Base(p)
	if len(base) > 1 && base[0] == 'v' && strings.Trim(base[1:], "0123456789") == "" {
		base = path.Base(path.Dir(p))
	}
	return base
}

// importSpec renders an import of ip under name.
func importSpec(name, ip string) string {
	if pathName(ip) == name {
		return strconv.Quote(ip)
	}
	return name + " " + strconv.Quote(ip)
}

// qualifiers returns, sorted, the identifiers p uses as package
// qualifiers (X in X.Sel) that resolve to nothing in the snippet or the
// group's package-level names.
func qualifiers(p parsed, declared map[string]bool) []string {
	unresolved := map[*ast.Ident]bool{}
	for _, id := range p.file.Unresolved {
		unresolved[id] = true
	}
	set := map[string]bool{}
	ast.Inspect(p.file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && unresolved[id] && !declared[id.Name] {
			set[id.Name] = true
		}
		return true
	})
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewImports builds the name table from the packages snippets may use,
// given as import path to package name. A name that two paths share maps
// to "" (ambiguous) unless prefer names the path to use.
func NewImports(pkgs map[string]string, prefer map[string]string) Imports {
	paths := make([]string, 0, len(pkgs))
	for p := range pkgs {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	im := Imports{}
	for _, p := range paths {
		n := pkgs[p]
		if old, ok := im[n]; ok && old != p {
			im[n] = ""
			continue
		}
		im[n] = p
	}
	for n, p := range prefer {
		if pkgs[p] == n {
			im[n] = p
		}
	}
	return im
}
