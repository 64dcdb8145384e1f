// Command otlpjson turns one OTLP/protobuf ExportTraceServiceRequest (stdin)
// into the OTLP/JSON encoding of the same request (stdout, one line), with
// the Collector's pdata, so that the live corpus's captures are JSON Lines
// whatever the program's exporter sent. OpenTelemetry Python's OTLP/HTTP
// exporter speaks protobuf only; capture.mjs runs this for each protobuf
// body it receives.
package main

import (
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func main() {
	if err := convert(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otlpjson:", err)
		os.Exit(1)
	}
}

func convert(in io.Reader, out io.Writer) error {
	body, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(body)
	if err != nil {
		return fmt.Errorf("decode OTLP/protobuf ExportTraceServiceRequest: %w", err)
	}
	js, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return fmt.Errorf("encode OTLP/JSON: %w", err)
	}
	if _, err := out.Write(append(js, '\n')); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}
