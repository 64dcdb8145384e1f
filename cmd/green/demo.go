package main

import (
	"context"
	"fmt"
	"io"
)

func demo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "green demo: not built yet")
	return 1
}
