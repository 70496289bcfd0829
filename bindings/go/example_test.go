package toolnexus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	toolnexus "github.com/toolnexus/toolnexus-rs/bindings/go"
)

func Example() {
	tk, err := toolnexus.Build(context.Background(), map[string]any{
		"builtins": false,
		"skills": []map[string]any{
			{"name": "haiku", "description": "Write a haiku.", "content": "Three lines: 5, 7, 5 syllables."},
		},
	})
	if err != nil {
		panic(err)
	}
	defer tk.Close()

	err = tk.Register("shout", "Upper-case the text.", `{"type":"object","properties":{"text":{"type":"string"}}}`,
		func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return strings.ToUpper(in.Text), nil
		})
	if err != nil {
		panic(err)
	}

	names, _ := tk.Render("toolNames")
	fmt.Println(string(names))

	res, _ := tk.Execute(context.Background(), "shout", map[string]string{"text": "old pond"})
	fmt.Println(res.Output, res.IsError)

	res, _ = tk.Execute(context.Background(), "nope", nil)
	fmt.Println(res.Output, res.IsError)
	// Output:
	// ["shout","skill"]
	// OLD POND false
	// unknown tool: nope true
}
