package toolnexus_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestEveryEntryPointHasAnExample: each exported function and each exported
// method of an exported type (what go doc lists) has an Example: ExampleF,
// ExampleT_M, or either with a _suffix.
func TestEveryEntryPointHasAnExample(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	examples := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if strings.HasSuffix(name, "_test.go") {
				if fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
					examples[strings.TrimPrefix(fn.Name.Name, "Example")] = true
				}
				continue
			}
			if !fn.Name.IsExported() {
				continue
			}
			entry := fn.Name.Name
			if fn.Recv != nil {
				typ := fn.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				id, ok := typ.(*ast.Ident)
				if !ok || !id.IsExported() {
					continue
				}
				entry = id.Name + "_" + entry
			}
			want = append(want, entry)
		}
	}
	if len(want) < 30 {
		t.Fatalf("found only %d exported entry points: the scan is broken", len(want))
	}
	for _, w := range want {
		found := examples[w]
		for ex := range examples {
			if strings.HasPrefix(ex, w+"_") && len(ex) > len(w)+1 && ex[len(w)+1] >= 'a' && ex[len(w)+1] <= 'z' {
				found = true
			}
		}
		if !found {
			t.Errorf("no Example for %s (add Example%s to example_test.go)", strings.Replace(w, "_", ".", 1), w)
		}
	}
}
