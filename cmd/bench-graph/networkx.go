package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// timeNetworkx times networkx on g in a fresh Python process running the
// timing script; it returns the timing and networkx's version.
func timeNetworkx(ctx context.Context, o options, g graphIn) (*timing, string, error) {
	script := o.script
	if _, err := os.Stat(script); err != nil {
		return nil, "", fmt.Errorf("timing script %s not found (run from the repository root): %w", script, err)
	}
	body, err := json.Marshal(map[string]any{"graphs": []graphIn{g}})
	if err != nil {
		return nil, "", fmt.Errorf("encoding the graph: %w", err)
	}
	args := []string{filepath.Clean(script), "--full-max", strconv.Itoa(o.fullMax), "--sample", strconv.Itoa(o.sample),
		"--runs", strconv.Itoa(o.runsFor(len(g.Nodes)))}
	if o.nxFull {
		args = append(args, "--full")
	}
	cmd := exec.CommandContext(ctx, o.python, args...)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", o.python, script, err)
	}
	var resp struct {
		Networkx string            `json:"networkx"`
		Results  map[string]timing `json:"results"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, "", fmt.Errorf("decoding the timing script's answer: %w", err)
	}
	t, ok := resp.Results[g.ID]
	if !ok {
		return nil, "", fmt.Errorf("the timing script did not answer for graph %s", g.ID)
	}
	return &t, resp.Networkx, nil
}
