package stack

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coordbench/coordbench/internal/testenv"
)

// docker-compose-local.yaml, checked by Compose itself: no Docker engine
// runs here, but `docker-compose config` parses, validates and normalizes
// the file without one (Debian's docker-compose; .ci/run installs it).
// The normalized output is then checked for what AgentBeats and the stack
// need of each service.

// composeAgents are the stack's A2A agents: each takes the AgentBeats
// command line and has a health check on its agent card.
var composeAgents = []string{"green", "coordinator", "reviewer-1", "reviewer-2"}

func composeConfig(t *testing.T, args ...string) string {
	t.Helper()
	bin := testenv.NeedTool(t, "docker-compose", "Debian package docker-compose")
	cmd := exec.Command(bin, append([]string{"-f", repoFile(t, "docker-compose-local.yaml"), "config"}, args...)...)
	// No AGENTBEATS_LLM_* from the developer's shell in the output.
	cmd.Env = scrubbedEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("docker-compose config %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestComposeFileValid(t *testing.T) {
	composeConfig(t, "-q")

	services := strings.Fields(composeConfig(t, "--services"))
	slices.Sort(services)
	want := append([]string{"jaeger", "otel-collector"}, composeAgents...)
	slices.Sort(want)
	if !slices.Equal(services, want) {
		t.Fatalf("services %v, want %v", services, want)
	}

	blocks := serviceBlocks(composeConfig(t))
	for _, name := range composeAgents {
		b := blocks[name]
		// The AgentBeats command line.
		cmd := listAt(b, "command")
		for _, pair := range [][2]string{{"--host", "0.0.0.0"}, {"--port", "'9009'"}, {"--card-url", "http://" + name + ":9009"}} {
			if i := slices.Index(cmd, pair[0]); i < 0 || i+1 >= len(cmd) || cmd[i+1] != pair[1] {
				t.Errorf("%s: command %q lacks %s %s", name, cmd, pair[0], pair[1])
			}
		}
		if !strings.Contains(b, "healthcheck:") || !strings.Contains(b, "/.well-known/agent-card.json") || !strings.Contains(b, "- curl") {
			t.Errorf("%s: no health check on the agent card:\n%s", name, b)
		}
		// Every agent exports only to the collector.
		if !strings.Contains(b, "OTEL_EXPORTER_OTLP_ENDPOINT: http://otel-collector:4318") {
			t.Errorf("%s: spans do not go to the collector:\n%s", name, b)
		}
		if !strings.Contains(b, "platform: linux/amd64") {
			t.Errorf("%s: no linux/amd64 platform:\n%s", name, b)
		}
	}
	if b := blocks["green"]; !strings.Contains(b, "dockerfile: Dockerfile.green") {
		t.Errorf("green is not built from Dockerfile.green:\n%s", b)
	}
	for _, name := range []string{"coordinator", "reviewer-1", "reviewer-2"} {
		if b := blocks[name]; !strings.Contains(b, "dockerfile: Dockerfile.purple") {
			t.Errorf("%s is not built from Dockerfile.purple:\n%s", name, b)
		}
	}

	j := blocks["jaeger"]
	if !strings.Contains(j, "published: 16686") && !strings.Contains(j, "- 16686:16686") {
		t.Errorf("jaeger: UI port 16686 not published:\n%s", j)
	}
	if !strings.Contains(j, "jaeger-config.yaml:/etc/jaeger/config.yaml") {
		t.Errorf("jaeger: does not run jaeger-config.yaml:\n%s", j)
	}
	c := blocks["otel-collector"]
	if !strings.Contains(c, "collector-config.yaml:/etc/otelcol/config.yaml") {
		t.Errorf("otel-collector: does not run collector-config.yaml:\n%s", c)
	}
	for _, kv := range []string{"JAEGER_OTLP_ENDPOINT: http://jaeger:4318", "GREEN_OTLP_TRACES_ENDPOINT: http://green:9009/v1/traces"} {
		if !strings.Contains(c, kv) {
			t.Errorf("otel-collector: lacks %s:\n%s", kv, c)
		}
	}
}

// serviceBlocks splits `docker-compose config` output (services at two
// spaces of indentation under `services:`) into each service's text, with
// the service's own keys moved to the first column.
func serviceBlocks(out string) map[string]string {
	blocks := map[string]string{}
	in, cur := false, ""
	var b strings.Builder
	flush := func() {
		if cur != "" {
			blocks[cur] = b.String()
		}
		b.Reset()
	}
	for line := range strings.Lines(out) {
		switch {
		case line == "services:\n":
			in = true
			continue
		case !strings.HasPrefix(line, " ") && strings.TrimSpace(line) != "":
			flush()
			in, cur = false, ""
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":\n") {
			flush()
			cur = strings.TrimSuffix(strings.TrimSpace(line), ":")
			continue
		}
		b.WriteString(strings.TrimPrefix(line, "    "))
	}
	flush()
	return blocks
}

// listAt is the list under key at the top of a service block ("command:"
// followed by "- item" lines).
func listAt(block, key string) []string {
	var items []string
	in := false
	for line := range strings.Lines(block) {
		line = strings.TrimRight(line, "\n")
		if line == key+":" {
			in = true
			continue
		}
		if !in {
			continue
		}
		item, ok := strings.CutPrefix(line, "- ")
		if !ok {
			break
		}
		items = append(items, item)
	}
	return items
}

// TestComposeCommandsServe runs each agent's binary with the command line
// the compose file gives its service (only the listen address moved to a
// free loopback port), as the image's ENTRYPOINT would: the flags must be
// ones the binary takes, the agent must serve its card advertising the
// --card-url, and SIGTERM (docker stop) must end it cleanly.
func TestComposeCommandsServe(t *testing.T) {
	blocks := serviceBlocks(composeConfig(t))
	// Built once, in the parent test (a subtest's temporary directory ends
	// with the subtest).
	built := map[string]string{}
	for _, binary := range []string{"green", "purple"} {
		if _, err := os.Stat(filepath.Join(repoRoot(t), "cmd", binary)); err == nil {
			built[binary] = goBuild(t, binary)
		}
	}
	for _, name := range composeAgents {
		t.Run(name, func(t *testing.T) {
			b := blocks[name]
			binary := "purple"
			if strings.Contains(b, "dockerfile: Dockerfile.green") {
				binary = "green"
			}
			bin, ok := built[binary]
			if !ok {
				testenv.Missing(t, "cmd/%s does not exist", binary)
			}
			args := listAt(b, "command")
			port := strconv.Itoa(freePort(t))
			cardURL := ""
			for i := range args {
				args[i] = strings.Trim(args[i], "'")
				if i == 0 {
					continue
				}
				switch args[i-1] {
				case "--host":
					args[i] = "127.0.0.1"
				case "--port":
					args[i] = port
				case "--card-url":
					cardURL = args[i]
				}
			}
			p := startProcess(t, name, bin, args, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"}, "")
			base := "http://127.0.0.1:" + port
			waitFor(t, name, 30*time.Second, p, httpOK(base+"/.well-known/agent-card.json"))
			var card struct {
				Name                string `json:"name"`
				URL                 string `json:"url"`
				SupportedInterfaces []struct {
					URL string `json:"url"`
				} `json:"supportedInterfaces"`
			}
			if err := json.Unmarshal(httpGet(t, base+"/.well-known/agent-card.json"), &card); err != nil {
				t.Fatalf("card: %v", err)
			}
			if strings.TrimRight(card.URL, "/") != cardURL {
				t.Errorf("card url %q, want the --card-url %q", card.URL, cardURL)
			}
			for _, in := range card.SupportedInterfaces {
				if !strings.HasPrefix(in.URL, cardURL) {
					t.Errorf("card interface url %q is not under the --card-url %q", in.URL, cardURL)
				}
			}
			if binary == "purple" && card.Name != name {
				t.Errorf("card name %q, want the service name %q (its spans' service.name)", card.Name, name)
			}
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
				if p.err != nil {
					t.Errorf("%s after SIGTERM: %v", name, p.err)
				}
			case <-time.After(20 * time.Second):
				t.Errorf("%s still running 20 s after SIGTERM", name)
			}
		})
	}
}
