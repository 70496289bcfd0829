// A Go program outside the repository using the installed library: cgo finds
// it through pkg-config (scripts/install_check.sh runs it).
//
//	go run . SKILLS_DIR
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run . SKILLS_DIR")
		os.Exit(2)
	}
	tk, err := toolnexus.Build(context.Background(), map[string]any{"skillsDir": os.Args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	defer tk.Close()
	status, err := tk.Render("status")
	if err != nil {
		fmt.Fprintln(os.Stderr, "status:", err)
		os.Exit(1)
	}
	var st struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(status, &st); err != nil || len(st.Warnings) > 0 {
		fmt.Fprintf(os.Stderr, "status: %s\n", status)
		os.Exit(1)
	}
	res, err := tk.Execute(context.Background(), "skill", map[string]any{"name": "hello-world"})
	if err != nil || res.IsError || !strings.Contains(res.Output, "hello-world") {
		fmt.Fprintf(os.Stderr, "skill: %v %+v\n", err, res)
		os.Exit(1)
	}
	fmt.Printf("go: libtoolnexus %s, skill hello-world gave %d bytes\n", toolnexus.Version(), len(res.Output))
}
