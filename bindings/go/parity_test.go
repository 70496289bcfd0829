package toolnexus

// The Go parity harness: runs every case of the conformance vectors
// (tests/conformance/vectors, or the directory named by TN_CONFORMANCE_DIR)
// through this package and compares with what the upstream Clojure port
// recorded, by the rules of tests/conformance/README.md.
//
//   go test ./bindings/go -run Parity -v
//
// Rules this harness decides where README leaves room (the C harness,
// bindings/c/tests/parity.c, applies the same ones):
//   - hostSpecific: for a ToolResult only isError is compared, plus a trailing
//     "exit code N" line of the recorded output (the portable part of /bin/sh
//     text); metadata is not compared and expectFiles is compared by file
//     names only. For a translate error only the failure status is compared.
//     Every other expectation of the case (server requests, statuses) is
//     compared as usual.
//   - A case's required capability (its op, plus "mcp" / "httpTools" when the
//     toolkit declares them, plus "builtinExec" for executing one of the ten
//     builtins) must be in supported, else the case counts S ("mcp" is
//     supported as soon as the library lists an MCP server in its status, see
//     mcpWired). A call that
//     fails with a message saying "not implemented" or "not supported" also
//     counts S.
//   - Divergences (divergences.json) count D; proposed ones
//     (proposed-divergences.json) count separately; neither is run.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// supported lists what the library on this branch implements; a case needing
// anything else counts S. TN_PARITY_SUPPORTED (comma-separated) overrides it.
var supported = map[string]bool{
	"render":      true,
	"loadSkills":  true,
	"execute":     true, // the skill tool and routing
	"builtinExec": true, // executing the ten builtins
	"httpTools":   true,
	"helper":      true,
	"translate":   true,
	"run":         true,
	// "mcp" is added when the library reports MCP servers (mcpWired)
}

// mcpWired asks the library whether it connects MCP servers yet: a toolkit
// with one unspawnable server must list that server in its status.
func mcpWired() bool {
	tk, err := Build(context.Background(), `{"builtins":false,"mcpConfig":{"mcpServers":{"tn-probe":{"command":["/nonexistent/tn-probe"]}}}}`)
	if err != nil {
		return false
	}
	defer tk.Close()
	out, err := tk.Render("status")
	if err != nil {
		return false
	}
	var st struct {
		Statuses map[string]string `json:"statuses"`
	}
	return json.Unmarshal(out, &st) == nil && st.Statuses["tn-probe"] != ""
}

var builtinNames = map[string]bool{
	"apply_patch": true, "bash": true, "edit": true, "glob": true, "grep": true,
	"question": true, "read": true, "todowrite": true, "webfetch": true, "write": true,
}

type vectorCase struct {
	ID                   string                       `json:"id"`
	Op                   string                       `json:"op"`
	Files                map[string]string            `json:"files"`
	Symlinks             map[string]string            `json:"symlinks"`
	Env                  map[string]*string           `json:"env"`
	Toolkit              json.RawMessage              `json:"toolkit"`
	Format               string                       `json:"format"`
	ToolOrder            []string                     `json:"toolOrder"`
	Name                 string                       `json:"name"`
	Args                 json.RawMessage              `json:"args"`
	Ctx                  json.RawMessage              `json:"ctx"`
	Fn                   string                       `json:"fn"`
	Client               json.RawMessage              `json:"client"`
	Request              json.RawMessage              `json:"request"`
	Expect               json.RawMessage              `json:"expect"`
	ExpectFiles          map[string]string            `json:"expectFiles"`
	ExpectServerRequests []expectedServerRequest      `json:"expectServerRequests"`
	HostSpecific         any                          `json:"hostSpecific"`
	Volatile             []string                     `json:"volatile"`
	ServerResponse       *cannedResponse              `json:"serverResponse"`
	ServerResponses      []cannedResponse             `json:"serverResponses"`
	ProviderResponse     *cannedResponse              `json:"providerResponse"`
	ProviderResponses    []cannedResponse             `json:"providerResponses"`
	Prompt               string                       `json:"prompt"`
	History              json.RawMessage              `json:"history"`
	Hooks                map[string][]json.RawMessage `json:"hooks"`
	WaitFor              json.RawMessage              `json:"waitFor"`
	Raw                  map[string]json.RawMessage   `json:"-"`
}

type expectedServerRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Query   *string           `json:"query"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

type expectedProviderRequest struct {
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

type outcome int

const (
	outPass outcome = iota
	outFail
	outSkip
)

type tally struct{ pass, fail, div, skip, proposed int }

func (t *tally) add(o tally) {
	t.pass += o.pass
	t.fail += o.fail
	t.div += o.div
	t.skip += o.skip
	t.proposed += o.proposed
}

// skipReasons says why a file's cases were skipped, so no skipped count in
// the log goes unexplained: " (skipped: 69 unknown op run)".
func skipReasons(why map[string]int) string {
	if len(why) == 0 {
		return ""
	}
	keys := make([]string, 0, len(why))
	for k := range why {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", why[k], k)
	}
	return " (skipped: " + strings.Join(parts, "; ") + ")"
}

func (t tally) line() string {
	return fmt.Sprintf("%d passed, %d failed, %d divergences, %d skipped, %d proposed",
		t.pass, t.fail, t.div, t.skip, t.proposed)
}

func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// divergenceIDs reads the case ids of a divergences file ({"divergences":{id:...}}).
func divergenceIDs(path string) (map[string]bool, error) {
	ids := map[string]bool{}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ids, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Divergences map[string]json.RawMessage `json:"divergences"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	for id := range doc.Divergences {
		ids[id] = true
	}
	return ids, nil
}

// vectorFiles lists every *.json under dir (recursively, sorted), except the
// divergence lists themselves.
func vectorFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		base := d.Name()
		if !d.IsDir() && strings.HasSuffix(base, ".json") && base != "divergences.json" && base != "proposed-divergences.json" {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// loadCases returns the raw case objects of a vector file: {"cases":[...]}
// or a bare array.
func loadCases(path string) ([]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err == nil && doc.Cases != nil {
		return doc.Cases, nil
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(b, &arr); err != nil {
		return nil, fmt.Errorf("%s: neither {\"cases\":[...]} nor an array: %v", path, err)
	}
	return arr, nil
}

func TestParity(t *testing.T) {
	root := repoRoot(t)
	vecDir := os.Getenv("TN_CONFORMANCE_DIR")
	if vecDir == "" {
		vecDir = filepath.Join(root, "tests", "conformance", "vectors")
	}
	// divergences.json lives beside or above the vectors; the repo's copy is
	// the fallback. Proposed divergences are always the repo's own list.
	div := map[string]bool{}
	for _, p := range []string{filepath.Join(vecDir, "divergences.json"), filepath.Join(vecDir, "..", "divergences.json")} {
		ids, err := divergenceIDs(p)
		if err != nil {
			t.Fatal(err)
		}
		for id := range ids {
			div[id] = true
		}
	}
	if len(div) == 0 {
		ids, err := divergenceIDs(filepath.Join(root, "tests", "conformance", "divergences.json"))
		if err != nil {
			t.Fatal(err)
		}
		div = ids
	}
	proposed, err := divergenceIDs(filepath.Join(root, "tests", "conformance", "proposed-divergences.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(vecDir, "proposed-divergences.json"), filepath.Join(vecDir, "..", "proposed-divergences.json")} {
		ids, err := divergenceIDs(p)
		if err != nil {
			t.Fatal(err)
		}
		for id := range ids {
			proposed[id] = true
		}
	}
	supp := map[string]bool{}
	for k, v := range supported {
		supp[k] = v
	}
	supp["mcp"] = mcpWired()
	if s := os.Getenv("TN_PARITY_SUPPORTED"); s != "" {
		supp = map[string]bool{}
		for _, f := range strings.Split(s, ",") {
			supp[strings.TrimSpace(f)] = true
		}
	}

	files, err := vectorFiles(vecDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no vector files under %s", vecDir)
	}
	var total tally
	var failures []string
	for _, file := range files {
		cases, err := loadCases(file)
		if err != nil {
			t.Fatal(err)
		}
		var ft tally
		skipped := map[string]int{} // why -> cases, printed with the file's line
		for _, raw := range cases {
			var head struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(raw, &head)
			switch {
			case div[head.ID]:
				ft.div++
				continue
			case proposed[head.ID]:
				ft.proposed++
				continue
			}
			o, why := runCase(raw, supp)
			switch o {
			case outPass:
				ft.pass++
			case outSkip:
				ft.skip++
				skipped[why]++
				if os.Getenv("TN_PARITY_VERBOSE") != "" {
					t.Logf("skip %s: %s", head.ID, why)
				}
			default:
				ft.fail++
				failures = append(failures, fmt.Sprintf("FAIL %s\n%s", head.ID, why))
			}
		}
		rel, _ := filepath.Rel(vecDir, file)
		fmt.Printf("parity[%s]: %s%s\n", rel, ft.line(), skipReasons(skipped))
		total.add(ft)
	}
	for _, f := range failures {
		fmt.Println(f)
	}
	fmt.Printf("parity: %d passed, %d failed, %d divergences, %d skipped (%d proposed divergences)\n",
		total.pass, total.fail, total.div, total.skip, total.proposed)
	if total.fail > 0 {
		t.Fatalf("parity: %d case(s) failed", total.fail)
	}
}

// requires lists the capabilities a case needs.
func (c *vectorCase) requires() []string {
	req := []string{c.Op}
	var tk map[string]json.RawMessage
	_ = json.Unmarshal(c.Toolkit, &tk)
	if _, ok := tk["mcpConfig"]; ok {
		req = append(req, "mcp")
	}
	if _, ok := tk["httpTools"]; ok {
		req = append(req, "httpTools")
	}
	if c.Op == "execute" && builtinNames[c.Name] && tk["mcpConfig"] == nil && tk["httpTools"] == nil {
		req = append(req, "builtinExec")
	}
	return req
}

var notImplemented = regexp.MustCompile(`(?i)not (yet )?(implemented|supported)`)

// isUnsupported says whether a library error means "this is not built yet".
func isUnsupported(err error) bool {
	e, ok := err.(*Error)
	return ok && notImplemented.MatchString(e.Message)
}

// jsonFragment escapes s for use inside a JSON string literal.
func jsonFragment(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

// runCase prepares the scratch directory, the environment and the mock
// server, runs the op and compares. The returned text explains a failure or
// a skip.
func runCase(raw json.RawMessage, supp map[string]bool) (outcome, string) {
	var probe vectorCase
	if err := json.Unmarshal(raw, &probe); err != nil {
		return outFail, "case is not valid JSON: " + err.Error()
	}
	for _, r := range probe.requires() {
		if !supp[r] {
			return outSkip, "needs " + r
		}
	}

	scratch, err := os.MkdirTemp("", "tnparity-")
	if err != nil {
		return outFail, err.Error()
	}
	defer os.RemoveAll(scratch)
	root, err := filepath.EvalSymlinks(scratch)
	if err != nil {
		return outFail, err.Error()
	}
	raw = bytes.ReplaceAll(raw, []byte("${ROOT}"), jsonFragment(root))

	needServer := probe.ServerResponse != nil || probe.ServerResponses != nil ||
		probe.ProviderResponse != nil || probe.ProviderResponses != nil || bytes.Contains(raw, []byte("${BASE}"))
	var srv *mockServer
	if needServer {
		if srv, err = startMockServer(); err != nil {
			return outFail, "mock server: " + err.Error()
		}
		defer srv.close()
		raw = bytes.ReplaceAll(raw, []byte("${BASE}"), jsonFragment(srv.base()))
	}
	var c vectorCase
	if err := json.Unmarshal(raw, &c); err != nil {
		return outFail, "case is not valid JSON after substitution: " + err.Error()
	}
	if srv != nil && c.Op == "run" {
		// HTTP tools (paths under /tool/) answer from serverResponses.
		srv.setToolResponses(c.ServerResponses)
		srv.setResponses(c.ProviderResponses)
	} else if srv != nil {
		var rs []cannedResponse
		for _, one := range []*cannedResponse{c.ServerResponse, c.ProviderResponse} {
			if one != nil {
				rs = append(rs, *one)
			}
		}
		rs = append(rs, c.ServerResponses...)
		rs = append(rs, c.ProviderResponses...)
		srv.setResponses(rs)
	}

	if err := writeTree(root, c.Files, c.Symlinks); err != nil {
		return outFail, "writing files: " + err.Error()
	}
	restoreEnv := applyEnv(c.Env)
	defer restoreEnv()
	oldWd, err := os.Getwd()
	if err != nil {
		return outFail, err.Error()
	}
	if err := os.Chdir(root); err != nil {
		return outFail, err.Error()
	}
	defer os.Chdir(oldWd)

	var diffs []string
	var runErr error
	switch c.Op {
	case "render":
		diffs, runErr = runRender(&c)
	case "loadSkills":
		diffs, runErr = runLoadSkills(&c)
	case "execute":
		diffs, runErr = runExecute(&c, root, srv)
	case "helper":
		diffs, runErr = runHelper(&c)
	case "translate":
		diffs, runErr = runTranslate(&c, srv)
	case "run":
		diffs, runErr = runRun(&c, root, srv)
	default:
		return outSkip, "unknown op " + c.Op
	}
	if runErr != nil {
		if isUnsupported(runErr) {
			return outSkip, runErr.Error()
		}
		return outFail, "  " + runErr.Error()
	}
	if len(diffs) > 0 {
		if len(diffs) > 8 {
			diffs = append(diffs[:8], fmt.Sprintf("... and %d more", len(diffs)-8))
		}
		return outFail, "  " + strings.Join(diffs, "\n  ")
	}
	return outPass, ""
}

func writeTree(root string, files, links map[string]string) error {
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			return err
		}
	}
	for rel, target := range links {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	return nil
}

// applyEnv sets (or, for null, unsets) the case's variables and returns the
// function restoring the previous environment.
func applyEnv(env map[string]*string) func() {
	type saved struct {
		val string
		set bool
	}
	prev := map[string]saved{}
	for k, v := range env {
		old, had := os.LookupEnv(k)
		prev[k] = saved{old, had}
		if v == nil {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, *v)
		}
	}
	return func() {
		for k, s := range prev {
			if s.set {
				os.Setenv(k, s.val)
			} else {
				os.Unsetenv(k)
			}
		}
	}
}

func buildToolkit(c *vectorCase) (*Toolkit, error) {
	cfg := c.Toolkit
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	return Build(context.Background(), cfg)
}

// ---- ops ----

func runRender(c *vectorCase) ([]string, error) {
	tk, err := buildToolkit(c)
	if err != nil {
		return nil, err
	}
	defer tk.Close()
	format := c.Format
	if format == "mcpStatus" {
		format = "status"
	}
	var out json.RawMessage
	if c.ToolOrder != nil {
		out, err = tk.RenderTools(format, c.ToolOrder)
	} else {
		out, err = tk.Render(format)
	}
	if err != nil {
		return nil, err
	}
	exp, err := decodeJSON(c.Expect)
	if err != nil {
		return nil, fmt.Errorf("expect: %v", err)
	}
	act, err := decodeJSON(out)
	if err != nil {
		return []string{"render output is not JSON: " + err.Error()}, nil
	}
	if c.Format == "mcpStatus" {
		return compareMcpStatus(exp, act), nil
	}
	return compare("", exp, act, newCmp(c)), nil
}

// compareMcpStatus: statuses exactly, errors by their keys (messages are prose).
func compareMcpStatus(exp, act any) []string {
	em, _ := exp.(map[string]any)
	am, ok := act.(map[string]any)
	if !ok {
		return []string{"status: not an object"}
	}
	diffs := compare("statuses", em["statuses"], am["statuses"], &cmpOpts{})
	ek, _ := em["errors"].(map[string]any)
	ak, _ := am["errors"].(map[string]any)
	if !sameKeys(ek, ak) {
		diffs = append(diffs, fmt.Sprintf("errors: keys %v, want %v", keysOf(ak), keysOf(ek)))
	}
	return diffs
}

func runLoadSkills(c *vectorCase) ([]string, error) {
	tk, err := buildToolkit(c)
	if err != nil {
		return nil, err
	}
	defer tk.Close()
	exp, err := decodeJSON(c.Expect)
	if err != nil {
		return nil, err
	}
	em, _ := exp.(map[string]any)
	var diffs []string
	if loaded, ok := em["loaded"]; ok {
		out, err := tk.Render("skills")
		if err != nil {
			return nil, err
		}
		act, err := decodeJSON(out)
		if err != nil {
			return []string{"skills: not JSON"}, nil
		}
		diffs = append(diffs, compare("loaded", renameKeys(loaded, map[string]string{
			"filter-unmatched": "filterUnmatched", "sample-limit": "sampleLimit"}), act, newCmp(c))...)
	}
	if inv, ok := em["inventory"]; ok {
		out, err := tk.Render("skillsInventory")
		if err != nil {
			return nil, err
		}
		act, err := decodeJSON(out)
		if err != nil {
			return []string{"skillsInventory: not JSON"}, nil
		}
		diffs = append(diffs, compare("inventory", inv, act, newCmp(c))...)
	}
	return diffs, nil
}

func runExecute(c *vectorCase, root string, srv *mockServer) ([]string, error) {
	tk, err := buildToolkit(c)
	if err != nil {
		return nil, err
	}
	defer tk.Close()
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var ctx any
	if len(c.Ctx) > 0 && string(c.Ctx) != "null" {
		ctx = c.Ctx
	}
	out, err := tk.ExecuteJSON(context.Background(), c.Name, args, ctx)
	if err != nil {
		return nil, err
	}
	tk.Close() // ends MCP children before the files are listed
	exp, err := decodeJSON(c.Expect)
	if err != nil {
		return nil, err
	}
	act, err := decodeJSON(out)
	if err != nil {
		return []string{"ToolResult is not JSON: " + string(out)}, nil
	}
	var diffs []string
	if c.HostSpecific != nil {
		diffs = compareHostSpecific(exp, act)
	} else {
		diffs = compare("", exp, act, newCmp(c))
	}
	if c.ExpectFiles != nil {
		got, err := listFiles(root)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, compareFiles(c.ExpectFiles, got, c.HostSpecific != nil)...)
	}
	if c.ExpectServerRequests != nil {
		var got []recordedRequest
		if srv != nil {
			got = srv.recorded()
		}
		diffs = append(diffs, compareServerRequests(c.ExpectServerRequests, got)...)
	}
	return diffs, nil
}

var exitCodeLine = regexp.MustCompile(`(?:^|\n)(exit code -?\d+)$`)

// compareHostSpecific compares what is portable in a ToolResult whose text
// came from the JVM or /bin/sh: isError, and a trailing "exit code N" line.
func compareHostSpecific(exp, act any) []string {
	em, _ := exp.(map[string]any)
	am, ok := act.(map[string]any)
	if !ok {
		return []string{"ToolResult: not an object"}
	}
	var diffs []string
	if em["isError"] != am["isError"] {
		diffs = append(diffs, fmt.Sprintf("isError: got %v, want %v (output %q)", am["isError"], em["isError"], am["output"]))
	}
	eo, _ := em["output"].(string)
	ao, _ := am["output"].(string)
	if m := exitCodeLine.FindStringSubmatch(eo); m != nil && !strings.HasSuffix(ao, m[1]) {
		diffs = append(diffs, fmt.Sprintf("output: got %q, want it to end with %q", ao, m[1]))
	}
	return diffs
}

// listFiles maps every regular file under root (symlinks not followed) to its
// content.
func listFiles(root string) (map[string]string, error) {
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return got, err
}

func compareFiles(exp, got map[string]string, namesOnly bool) []string {
	var diffs []string
	for _, name := range sortedKeys(exp) {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("expectFiles: %s missing", name))
		case !namesOnly && g != exp[name]:
			diffs = append(diffs, fmt.Sprintf("expectFiles: %s = %q, want %q", name, g, exp[name]))
		}
	}
	for _, name := range sortedKeys(got) {
		if _, ok := exp[name]; !ok {
			diffs = append(diffs, fmt.Sprintf("expectFiles: unexpected file %s", name))
		}
	}
	return diffs
}

// headersMatch compares only the headers the case records: names
// case-insensitively, values exactly, and a header sent twice never matches.
func headersMatch(where string, exp map[string]string, got map[string][]string) []string {
	var diffs []string
	for _, k := range sortedKeys(exp) {
		vals := got[strings.ToLower(k)]
		if len(vals) != 1 || vals[0] != exp[k] {
			diffs = append(diffs, fmt.Sprintf("%s header %s: got %q, want %q", where, k, vals, exp[k]))
		}
	}
	return diffs
}

func isJSONContentType(vals []string) bool {
	for _, v := range vals {
		if strings.Contains(strings.ToLower(v), "json") {
			return true
		}
	}
	return false
}

func compareServerRequests(exp []expectedServerRequest, got []recordedRequest) []string {
	if len(exp) != len(got) {
		return []string{fmt.Sprintf("server requests: got %d, want %d", len(got), len(exp))}
	}
	var diffs []string
	for i, e := range exp {
		g := got[i]
		where := fmt.Sprintf("request[%d]", i)
		if e.Method != g.Method {
			diffs = append(diffs, fmt.Sprintf("%s method: got %s, want %s", where, g.Method, e.Method))
		}
		if e.Path != g.Path {
			diffs = append(diffs, fmt.Sprintf("%s path: got %q, want %q", where, g.Path, e.Path))
		}
		if (e.Query == nil) != (g.Query == nil) || (e.Query != nil && *e.Query != *g.Query) {
			diffs = append(diffs, fmt.Sprintf("%s query: got %s, want %s", where, strPtr(g.Query), strPtr(e.Query)))
		}
		diffs = append(diffs, headersMatch(where, e.Headers, g.Headers)...)
		if e.Body != nil {
			body := string(g.Body)
			if isJSONContentType(g.Headers["content-type"]) || isJSONContentType([]string{e.Headers["content-type"]}) {
				if eq, both := jsonTextEqual(*e.Body, body); both {
					if !eq {
						diffs = append(diffs, fmt.Sprintf("%s body: got %s, want %s", where, body, *e.Body))
					}
					continue
				}
			}
			if body != *e.Body {
				diffs = append(diffs, fmt.Sprintf("%s body: got %q, want %q", where, body, *e.Body))
			}
		}
	}
	return diffs
}

func strPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

func runHelper(c *vectorCase) ([]string, error) {
	args := c.Args
	if len(args) == 0 {
		args = json.RawMessage("[]")
	}
	out, err := Helper(c.Fn, args)
	if err != nil {
		return nil, err
	}
	exp, err := decodeJSON(c.Expect)
	if err != nil {
		return nil, err
	}
	act, err := decodeJSON(out)
	if err != nil {
		return []string{"helper output is not JSON: " + string(out)}, nil
	}
	opts := newCmp(c)
	if c.Fn == "argsString" {
		opts.textAt[""] = true
	}
	return compare("", exp, act, opts), nil
}

var llmStatusError = regexp.MustCompile(`(?s)^LLM (\d{3}): (.*)$`)

func runTranslate(c *vectorCase, srv *mockServer) ([]string, error) {
	exp, err := decodeJSON(c.Expect)
	if err != nil {
		return nil, err
	}
	em, _ := exp.(map[string]any)
	result, _ := em["result"].(map[string]any)
	// A toolkit recorded inside the request is, for us, tn_translate's own
	// toolkit argument.
	request, tkConfig, err := splitToolkit(c.Request)
	if err != nil {
		return nil, err
	}
	var tk *Toolkit
	if tkConfig != nil {
		if tk, err = Build(context.Background(), tkConfig); err != nil {
			return nil, err
		}
		defer tk.Close()
	}
	out, callErr := Translate(context.Background(), c.Client, request, tk)

	var diffs []string
	if wantErr, isErr := result["error"]; isErr && len(result) == 1 {
		if callErr == nil {
			diffs = append(diffs, fmt.Sprintf("want failure %q, got result %s", wantErr, out))
		} else if e, ok := callErr.(*Error); !ok || (e.Code != "provider_error" && e.Code != "timeout") {
			if isUnsupported(callErr) {
				return nil, callErr
			}
			diffs = append(diffs, fmt.Sprintf("want provider_error or timeout, got %v", callErr))
		} else if c.HostSpecific == nil {
			msg, _ := wantErr.(string)
			if m := llmStatusError.FindStringSubmatch(msg); m != nil {
				if !strings.Contains(e.Message, m[1]) || !strings.Contains(e.Message, m[2]) {
					diffs = append(diffs, fmt.Sprintf("error message %q does not carry status %s and body %q", e.Message, m[1], m[2]))
				}
			}
		}
	} else {
		if callErr != nil {
			return nil, callErr
		}
		act, err := decodeJSON(out)
		if err != nil {
			return []string{"translate result is not JSON: " + string(out)}, nil
		}
		if am, ok := act.(map[string]any); ok {
			delete(am, "raw") // ours carries the provider's raw answer; the recording does not
		}
		want := renameKeys(em["result"], map[string]string{
			"prompt-tokens": "promptTokens", "completion-tokens": "completionTokens", "total-tokens": "totalTokens"})
		diffs = append(diffs, compare("result", want, act, newCmp(c))...)
	}

	var got []recordedRequest
	if srv != nil {
		got = srv.recorded()
	}
	if list, ok := em["providerRequests"].([]any); ok {
		if len(list) != len(got) {
			diffs = append(diffs, fmt.Sprintf("provider requests: got %d, want %d", len(got), len(list)))
		} else {
			for i, pr := range list {
				diffs = append(diffs, compareProviderRequest(fmt.Sprintf("providerRequests[%d]", i), pr, got[i])...)
			}
		}
	} else if pr, ok := em["providerRequest"]; ok {
		switch {
		case pr == nil && len(got) != 0:
			diffs = append(diffs, fmt.Sprintf("provider requests: got %d, want none", len(got)))
		case pr != nil && len(got) != 1:
			diffs = append(diffs, fmt.Sprintf("provider requests: got %d, want 1", len(got)))
		case pr != nil:
			diffs = append(diffs, compareProviderRequest("providerRequest", pr, got[0])...)
		}
	}
	return diffs, nil
}

// splitToolkit takes a "toolkit" key out of a translate request.
func splitToolkit(request json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(request, &fields); err != nil || fields["toolkit"] == nil {
		return request, nil, nil
	}
	tk := fields["toolkit"]
	delete(fields, "toolkit")
	rest, err := json.Marshal(fields)
	return rest, tk, err
}

func compareProviderRequest(where string, exp any, got recordedRequest) []string {
	b, _ := json.Marshal(exp)
	var e expectedProviderRequest
	_ = json.Unmarshal(b, &e)
	var diffs []string
	if e.Method != got.Method {
		diffs = append(diffs, fmt.Sprintf("%s method: got %s, want %s", where, got.Method, e.Method))
	}
	if e.Path != got.Path {
		diffs = append(diffs, fmt.Sprintf("%s path: got %q, want %q", where, got.Path, e.Path))
	}
	diffs = append(diffs, headersMatch(where, e.Headers, got.Headers)...)
	if len(e.Body) > 0 {
		want, _ := decodeJSON(e.Body)
		act, err := decodeJSON(got.Body)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("%s body is not JSON: %q", where, got.Body))
		} else {
			diffs = append(diffs, compare(where+".body", want, act, &cmpOpts{textAt: map[string]bool{}})...)
		}
	}
	return diffs
}

// ---- JSON comparison ----

type cmpOpts struct {
	volatile map[string]bool // dot-paths relative to expect, ignored
	textAt   map[string]bool // paths whose strings are JSON text compared as values
	// jsonStrings: any string holding a JSON object or array compares as the
	// value it encodes (op run: tool outputs in transcripts and hook events).
	jsonStrings bool
}

// newCmp sets up the comparison rules of a case: its volatile paths, and the
// outputs README says are JSON text standing for a value.
func newCmp(c *vectorCase) *cmpOpts {
	o := &cmpOpts{volatile: map[string]bool{}, textAt: map[string]bool{}}
	for _, v := range c.Volatile {
		o.volatile[v] = true
	}
	if c.Op == "execute" && c.outputIsJSONText() {
		o.textAt["output"] = true
	}
	return o
}

// outputIsJSONText: the question tool's answered output, an HTTP tool in json
// result mode, an MCP tool's structuredContent.
func (c *vectorCase) outputIsJSONText() bool {
	var tk struct {
		McpConfig json.RawMessage `json:"mcpConfig"`
		HTTPTools []struct {
			Name       string `json:"name"`
			ResultMode string `json:"resultMode"`
		} `json:"httpTools"`
	}
	_ = json.Unmarshal(c.Toolkit, &tk)
	for _, h := range tk.HTTPTools {
		if h.Name == c.Name && h.ResultMode == "json" {
			return true
		}
	}
	if c.Name == "question" {
		return true
	}
	return len(tk.McpConfig) > 0 && !builtinNames[c.Name]
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

// jsonTextEqual compares two strings as the JSON values they encode; both
// reports whether both parsed.
func jsonTextEqual(a, b string) (eq, both bool) {
	av, err1 := decodeJSON([]byte(a))
	bv, err2 := decodeJSON([]byte(b))
	if err1 != nil || err2 != nil {
		return a == b, false
	}
	return len(compare("", av, bv, &cmpOpts{textAt: map[string]bool{}})) == 0, true
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func shorten(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func numEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	fa, err1 := strconv.ParseFloat(string(a), 64)
	fb, err2 := strconv.ParseFloat(string(b), 64)
	return err1 == nil && err2 == nil && fa == fb
}

// compare walks exp and act together and lists every difference. Strings
// compare byte for byte, except under a key "arguments" and at the paths in
// textAt, where JSON text compares as the value it encodes.
func compare(path string, exp, act any, o *cmpOpts) []string {
	if o.volatile[path] {
		return nil
	}
	label := path
	if label == "" {
		label = "(root)"
	}
	switch e := exp.(type) {
	case map[string]any:
		a, ok := act.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want object %s", label, shorten(act), shorten(exp))}
		}
		var diffs []string
		for _, k := range sortedKeys(e) {
			av, present := a[k]
			if !present {
				if !o.volatile[join(path, k)] {
					diffs = append(diffs, fmt.Sprintf("%s: missing, want %s", join(path, k), shorten(e[k])))
				}
				continue
			}
			diffs = append(diffs, compare(join(path, k), e[k], av, o)...)
		}
		for _, k := range sortedKeys(a) {
			if _, present := e[k]; !present {
				diffs = append(diffs, fmt.Sprintf("%s: unexpected, got %s", join(path, k), shorten(a[k])))
			}
		}
		return diffs
	case []any:
		a, ok := act.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want array %s", label, shorten(act), shorten(exp))}
		}
		if len(a) != len(e) {
			return []string{fmt.Sprintf("%s: got %d elements %s, want %d %s", label, len(a), shorten(act), len(e), shorten(exp))}
		}
		var diffs []string
		for i := range e {
			diffs = append(diffs, compare(join(path, strconv.Itoa(i)), e[i], a[i], o)...)
		}
		return diffs
	case string:
		a, ok := act.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: got %s, want string %q", label, shorten(act), e)}
		}
		jsonText := o.jsonStrings && (strings.HasPrefix(e, "{") || strings.HasPrefix(e, "["))
		if jsonText || o.textAt[path] || strings.HasSuffix("."+path, ".arguments") {
			if eq, both := jsonTextEqual(e, a); both {
				if !eq {
					return []string{fmt.Sprintf("%s: got JSON %s, want %s", label, a, e)}
				}
				return nil
			}
		}
		if a != e {
			return []string{fmt.Sprintf("%s: got %q, want %q", label, a, e)}
		}
		return nil
	case json.Number:
		a, ok := act.(json.Number)
		if !ok || !numEqual(e, a) {
			return []string{fmt.Sprintf("%s: got %s, want %s", label, shorten(act), e)}
		}
		return nil
	default: // bool, nil
		if exp != act {
			return []string{fmt.Sprintf("%s: got %s, want %s", label, shorten(act), shorten(exp))}
		}
		return nil
	}
}

// renameKeys maps recorded internal key names to ours, at every depth.
func renameKeys(v any, names map[string]string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if n, ok := names[k]; ok {
				k = n
			}
			out[k] = renameKeys(val, names)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = renameKeys(x[i], names)
		}
		return out
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func keysOf(m map[string]any) []string { return sortedKeys(m) }

func sameKeys(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}
