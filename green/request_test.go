package green

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/scenario"
)

func TestParseRequestAgentBeats(t *testing.T) {
	// The request as AgentBeats sends it: gateway URLs with a path, shared
	// keys, evaluator switches, and keys of other scenarios or future
	// versions, which are kept but not interpreted.
	text := `{
	  "participants": {"coordinator": "http://gateway:8080/coordinator", "reviewer": "https://r.example.org/a2a/"},
	  "config": {
	    "scenario": "coordination", "entry_role": "coordinator",
	    "task_ids": ["iclr2017-305", "iclr2017-749"], "num_tasks": 2,
	    "shard_index": 1, "num_shards": 3, "num_instances": 2,
	    "call_timeout_seconds": 12.5, "task_timeout_seconds": 60, "deadline_seconds": 600,
	    "settle_quiet_ms": 200, "settle_max_wait_ms": 3000, "repeats": 5,
	    "evaluators": {"judge": false}, "graph_metrics": {"pagerank": false},
	    "temperature": 0.2, "nested": {"anything": [1, 2]}
	  }
	}`
	req, err := ParseRequest(text)
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	if req.Legacy {
		t.Error("Legacy = true for a JSON request")
	}
	if got := req.Participants["coordinator"]; got != "http://gateway:8080/coordinator" {
		t.Errorf("coordinator URL = %q", got)
	}
	if got := req.Participants["reviewer"]; got != "https://r.example.org/a2a/" {
		t.Errorf("reviewer URL = %q", got)
	}
	c := req.Config
	if c.ScenarioName() != "coordination" || c.EntryRole != "coordinator" || len(c.TaskIDs) != 2 || c.NumTasks != 2 {
		t.Errorf("config = %+v", c)
	}
	if c.ShardIndex != 1 || c.NumShards != 3 || c.NumInstances != 2 {
		t.Errorf("sharding = %d/%d/%d, want 1/3/2", c.ShardIndex, c.NumShards, c.NumInstances)
	}
	if c.CallTimeout() != 12500*time.Millisecond || c.TaskTimeout() != time.Minute || c.Deadline() != 10*time.Minute {
		t.Errorf("timeouts = %v %v %v", c.CallTimeout(), c.TaskTimeout(), c.Deadline())
	}
	if c.SettleQuiet() != 200*time.Millisecond || c.SettleMaxWait() != 3*time.Second {
		t.Errorf("settle = %v %v", c.SettleQuiet(), c.SettleMaxWait())
	}
	if c.RepeatCount() != 5 {
		t.Errorf("repeats = %d, want 5", c.RepeatCount())
	}
	if c.Enabled("judge") || !c.Enabled("graph") || c.MetricEnabled("pagerank") {
		t.Errorf("evaluator switches = %+v", c.Config)
	}
	for _, k := range []string{"scenario", "temperature", "nested", "shard_index", "evaluators"} {
		if _, ok := c.Raw[k]; !ok {
			t.Errorf("Raw lacks %q: %v", k, c.Raw)
		}
	}
	if string(c.Raw["nested"]) != `{"anything": [1, 2]}` {
		t.Errorf("Raw[nested] = %s, want the bytes as sent", c.Raw["nested"])
	}
}

func TestParseRequestDefaults(t *testing.T) {
	req, err := ParseRequest(`{"participants": {"agent": "http://127.0.0.1:9019"}}`)
	if err != nil {
		t.Fatalf("ParseRequest: %v", err)
	}
	c := req.Config
	if c.ScenarioName() != scenario.Coordination {
		t.Errorf("scenario = %q, want the default %q", c.ScenarioName(), scenario.Coordination)
	}
	if c.CallTimeout() != a2acall.DefaultCallTimeout || c.TaskTimeout() != scenario.DefaultTaskTimeout || c.Deadline() != scenario.DefaultDeadline {
		t.Errorf("timeouts = %v %v %v", c.CallTimeout(), c.TaskTimeout(), c.Deadline())
	}
	if c.SettleQuiet() != scenario.DefaultSettleQuiet || c.SettleMaxWait() != scenario.DefaultSettleMaxWait {
		t.Errorf("settle = %v %v", c.SettleQuiet(), c.SettleMaxWait())
	}
	if c.RepeatCount() != scenario.DefaultRepeats {
		t.Errorf("repeats = %d, want the default %d", c.RepeatCount(), scenario.DefaultRepeats)
	}
	if c.Raw == nil || len(c.Raw) != 0 {
		t.Errorf("Raw = %v, want empty, not nil", c.Raw)
	}
	// A request pasted as a Markdown code block is the same request.
	fenced, err := ParseRequest("```json\n{\"participants\": {\"agent\": \"http://127.0.0.1:9019\"}}\n```")
	if err != nil || fenced.Participants["agent"] != "http://127.0.0.1:9019" {
		t.Errorf("fenced request: %+v, %v", fenced, err)
	}
}

func TestParseRequestLegacy(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		ids        []string
	}{
		{
			name: "scicode tags in a prompt",
			text: "Your task is to solve problems.\n<white_agent_url>http://white:9019/</white_agent_url>\n" +
				"<scicode_problem_id>13, 62</scicode_problem_id>\n<split> dev </split>\n<max_num_steps>3</max_num_steps>",
			ids: []string{"13", "62"},
		},
		{
			name: "problem_id spelling",
			text: "<white_agent_url>http://white:9019/</white_agent_url><problem_id>77</problem_id><split>test</split>",
			ids:  []string{"77"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest(tc.text)
			if err != nil {
				t.Fatalf("ParseRequest: %v", err)
			}
			if !req.Legacy || req.Config.ScenarioName() != scenario.SciCode {
				t.Errorf("legacy %v scenario %q", req.Legacy, req.Config.ScenarioName())
			}
			if req.Participants[LegacyParticipantRole] != "http://white:9019/" || len(req.Participants) != 1 {
				t.Errorf("participants = %v", req.Participants)
			}
			var ids []string
			if err := json.Unmarshal(req.Config.Raw["problem_ids"], &ids); err != nil || strings.Join(ids, ",") != strings.Join(tc.ids, ",") {
				t.Errorf("problem_ids = %s (%v), want %v", req.Config.Raw["problem_ids"], err, tc.ids)
			}
			var split string
			if err := json.Unmarshal(req.Config.Raw["split"], &split); err != nil || split == "" || strings.TrimSpace(split) != split {
				t.Errorf("split = %s", req.Config.Raw["split"])
			}
		})
	}
	req, err := ParseRequest("<white_agent_url>http://white:9019/</white_agent_url><max_num_steps>4</max_num_steps>")
	if err != nil {
		t.Fatal(err)
	}
	if string(req.Config.Raw["max_num_steps"]) != "4" {
		t.Errorf("max_num_steps = %s, want 4", req.Config.Raw["max_num_steps"])
	}
}

func TestParseRequestRejects(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"hello", "Hello", "neither the AgentBeats JSON nor the legacy tag format"},
		{"empty", "   ", "empty"},
		{"broken JSON", `{"participants": {"a": "http://x"`, "does not decode"},
		{"no participants", `{"config": {}}`, `"participants" is missing`},
		{"empty participants", `{"participants": {}}`, `"participants" is missing`},
		{"participants not a map", `{"participants": ["http://x"]}`, "participants must be an object"},
		{"ftp URL", `{"participants": {"a": "ftp://x/"}}`, "not an http:// or https:// URL"},
		{"relative URL", `{"participants": {"a": "/a2a"}}`, "not an http:// or https:// URL"},
		{"no host", `{"participants": {"a": "http:///path"}}`, "has no host"},
		{"credentials", `{"participants": {"a": "http://u:p@host/"}}`, "credentials"},
		{"empty role", `{"participants": {" ": "http://x/"}}`, "empty role"},
		{"config not an object", `{"participants": {"a": "http://x/"}, "config": [1]}`, "must be a JSON object"},
		{"wrong type", `{"participants": {"a": "http://x/"}, "config": {"num_tasks": "three"}}`, "num_tasks must be a whole number"},
		{"fraction", `{"participants": {"a": "http://x/"}, "config": {"num_tasks": 2.5}}`, "num_tasks must be a whole number"},
		{"negative", `{"participants": {"a": "http://x/"}, "config": {"task_timeout_seconds": -1}}`, "config.task_timeout_seconds -1 is out of range 0..86400"},
		{"negative repeats", `{"participants": {"a": "http://x/"}, "config": {"repeats": -2}}`, "config.repeats -2 is out of range 0..20"},
		{"too many repeats", `{"participants": {"a": "http://x/"}, "config": {"repeats": 21}}`, "config.repeats 21 is out of range 0..20"},
		{"fractional repeats", `{"participants": {"a": "http://x/"}, "config": {"repeats": 1.5}}`, "repeats must be a whole number"},
		{"shard out of range", `{"participants": {"a": "http://x/"}, "config": {"shard_index": 3, "num_shards": 3}}`, "out of range"},
		{"shard without shards", `{"participants": {"a": "http://x/"}, "config": {"shard_index": 1}}`, "needs num_shards"},
		{"unknown entry role", `{"participants": {"a": "http://x/"}, "config": {"entry_role": "b"}}`, `entry_role "b" is not among`},
		{"trailing text", `{"participants": {"a": "http://x/"}} and more`, "followed by more text"},
		{"legacy bad URL", "<white_agent_url>white:9019</white_agent_url>", "<white_agent_url>"},
		{"legacy bad steps", "<white_agent_url>http://w/</white_agent_url><max_num_steps>x</max_num_steps>", "max_num_steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParseRequest(tc.text)
			if err == nil {
				t.Fatalf("accepted: %+v", req)
			}
			var re *scenario.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *scenario.RequestError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error %q does not say %q", firstLine(msg), tc.want)
			}
			// Every rejection shows both formats.
			for _, help := range []string{`{"participants": {"<role>"`, "<white_agent_url>", "Config keys"} {
				if !strings.Contains(msg, help) {
					t.Errorf("error lacks the format help %q:\n%s", help, msg)
				}
			}
		})
	}
}

func TestRequestFormatHelpExamplesParse(t *testing.T) {
	// The examples the card and the help show must themselves be accepted.
	for _, ex := range []string{ExampleRequest, ExampleLegacyRequest} {
		if _, err := ParseRequest(ex); err != nil {
			t.Errorf("example %q rejected: %v", ex, err)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{ExampleRequest, ExampleLegacyRequest, "Hello", `{"participants": {"a": "http://x/"}, "config": {"num_shards": 2}}`, "```\n{}\n```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		req, err := ParseRequest(s)
		if err != nil {
			var re *scenario.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *scenario.RequestError", err)
			}
			return
		}
		if len(req.Participants) == 0 {
			t.Fatalf("accepted without participants: %q", s)
		}
		for role, u := range req.Participants {
			if _, err := checkParticipantURL(u); err != nil || role == "" {
				t.Fatalf("accepted participant %q=%q: %v", role, u, err)
			}
		}
	})
}
