package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	// The descriptors of the googleapis protos the 1.0 suite's stubs import,
	// compiled into Go's genproto (and the well-known types into protobuf).
	_ "google.golang.org/genproto/googleapis/api/annotations"
	_ "google.golang.org/genproto/googleapis/rpc/errdetails"
	_ "google.golang.org/genproto/googleapis/rpc/status"
	_ "google.golang.org/protobuf/types/known/emptypb"
	_ "google.golang.org/protobuf/types/known/structpb"
	_ "google.golang.org/protobuf/types/known/timestamppb"
)

// Suite is one pinned copy of the A2A TCK and how to run it.
type Suite struct {
	// Name is the protocol version ("0.3", "1.0"), as the list names it.
	Name string
	// Folder is the suite's folder under the TCK directory.
	Folder string
	// prepare readies the copy in dir: stubs, configuration.
	prepare func(ctx context.Context, dir string) error
	// args are pytest's arguments against the agent at base (no trailing
	// slash), after the common ones.
	args func(base string) []string
	// env is added to pytest's environment.
	env []string
}

// suites are the two a2a-tck snapshots of the -tck folder
// (docs/conformance.md), run over JSON-RPC: the 0.3.x suite's mandatory tests with the
// arguments its run_tck.py would pass, and the 1.0-dev suite's must level.
func suites() []Suite {
	return []Suite{
		{
			Name:   "0.3",
			Folder: "a2a-tck-0.3.x",
			args: func(base string) []string {
				return []string{"tests/mandatory/", "--sut-url=" + base + "/", "--test-scope=all",
					"-m", "mandatory_jsonrpc or mandatory_protocol",
					"--transport-strategy", "agent_preferred", "--transports", "jsonrpc"}
			},
		},
		{
			Name:    "1.0",
			Folder:  "a2a-tck-1.0-dev",
			prepare: prepare10,
			args: func(base string) []string {
				return []string{"-c", "coordbench-tck.ini", "tests/compatibility/", "--sut-host=" + base,
					"--transport=jsonrpc", "-m", "must"}
			},
			env: []string{"PYTHONPATH=" + googleModules},
		},
	}
}

// googleModules is the folder, inside the 1.0 copy, of the generated
// google.api and google.rpc modules.
const googleModules = "coordbench-gen"

// ini10 is the 1.0 suite's pytest configuration (its pyproject's markers
// and asyncio_mode) without its minversion, which asks for pytest 8 where
// Debian has 7.2.
const ini10 = `[pytest]
testpaths = tests
asyncio_mode = auto
markers =
    core: Core A2A protocol requirements
    must: MUST-level requirements (hard failure)
    should: SHOULD-level requirements (expected failure)
    may: MAY-level requirements (skip if not declared)
    grpc: gRPC transport specific tests
    jsonrpc: JSON-RPC transport specific tests
    http_json: HTTP+JSON transport specific tests
    streaming: Streaming-related tests
    integration: Integration tests (require running SUT)
`

// googleProtos are the googleapis files the 1.0 suite imports (its stubs
// and its gRPC error validator).
var googleProtos = []string{
	"google/api/annotations.proto", "google/api/client.proto", "google/api/field_behavior.proto",
	"google/api/http.proto", "google/api/launch_stage.proto",
	"google/rpc/status.proto", "google/rpc/error_details.proto",
}

// prepare10 regenerates the 1.0 suite's protobuf stubs for Debian's
// protobuf (its checked-in ones need protobuf 6) from its own
// specification/a2a.proto, and generates the google.api and google.rpc
// modules they import, with protoc and grpc_python_plugin. protoc reads
// the imported files from a descriptor set this program writes from Go's
// compiled-in descriptors, since no .proto sources of them are at hand.
func prepare10(ctx context.Context, dir string) error {
	if err := os.WriteFile(filepath.Join(dir, "coordbench-tck.ini"), []byte(ini10), 0o644); err != nil {
		return err
	}
	set, err := descriptorSet(append([]string{"google/protobuf/empty.proto", "google/protobuf/struct.proto",
		"google/protobuf/timestamp.proto"}, googleProtos...))
	if err != nil {
		return err
	}
	setFile := filepath.Join(dir, "coordbench-deps.pb")
	if err := os.WriteFile(setFile, set, 0o644); err != nil {
		return err
	}
	plugin, err := exec.LookPath("grpc_python_plugin")
	if err != nil {
		return fmt.Errorf("grpc_python_plugin (Debian package protobuf-compiler-grpc): %w", err)
	}
	gen := filepath.Join("specification", "generated")
	for _, f := range []string{"a2a_pb2.py", "a2a_pb2_grpc.py"} {
		if err := os.Remove(filepath.Join(dir, gen, f)); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, googleModules), 0o755); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"--descriptor_set_in=coordbench-deps.pb", "-Ispecification", "--python_out=" + gen,
			"--grpc_out=" + gen, "--plugin=protoc-gen-grpc=" + plugin, "specification/a2a.proto"},
		append([]string{"--descriptor_set_in=coordbench-deps.pb", "--python_out=" + googleModules}, googleProtos...),
	} {
		if err := run(ctx, dir, nil, "protoc", args...); err != nil {
			return fmt.Errorf("protoc (Debian package protobuf-compiler): %w", err)
		}
	}
	return nil
}

// descriptorSet is a FileDescriptorSet holding the named files and
// everything they import, imports first, from Go's registry.
func descriptorSet(paths []string) ([]byte, error) {
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(fd))
	}
	for _, p := range paths {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(p)
		if err != nil {
			return nil, fmt.Errorf("descriptor of %s: %w", p, err)
		}
		add(fd)
	}
	b, err := proto.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("descriptor set: %w", err)
	}
	return b, nil
}

// pythonModules are what the suites import, by their Debian packages.
var pythonModules = map[string]string{
	"pytest": "python3-pytest", "pytest_asyncio": "python3-pytest-asyncio", "httpx": "python3-httpx",
	"requests": "python3-requests", "responses": "python3-responses", "deepdiff": "python3-deepdiff",
	"jsonschema": "python3-jsonschema", "packaging": "python3-packaging", "yaml": "python3-yaml",
	"dotenv": "python3-dotenv", "OpenSSL": "python3-openssl", "aiohttp": "python3-aiohttp",
	"grpc": "python3-grpcio", "google.protobuf": "python3-protobuf",
}

// checkTools reports what the runs need and this machine lacks.
func checkTools(ctx context.Context, python string) error {
	var missing []string
	for _, tool := range []string{"protoc", "grpc_python_plugin"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	for mod, pkg := range pythonModules {
		if err := exec.CommandContext(ctx, python, "-c", "import "+mod).Run(); err != nil {
			missing = append(missing, fmt.Sprintf("%s (%s)", mod, pkg))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing: %s (.ci/run installs them with apt-get)", strings.Join(sortedCopy(missing), ", "))
	}
	return nil
}

// run runs a command in dir and returns its error with the output's tail.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out.String(), 2000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
