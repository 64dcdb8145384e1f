// Package sandbox runs untrusted Python code and reports what it did: the
// code's exit, its output, the time and CPU it took, and which limit it hit.
// It protects the machine from the code (a process group, resource limits,
// an unprivileged identity, a scrubbed environment, a private directory, an
// output cap and, where the kernel allows them, user, mount, network, PID,
// IPC and UTS namespaces with a read-only file system), and runs that go on
// at the same time from each other (an equal CPU share and an identity of
// its own per run, none of the machine's counters in sight); it knows nothing of
// what the code is for, and decides no verdict beyond "exited", "crashed",
// "timeout" and "limit". The SciCode scenario (scenario/scicode) uses it.
//
// The runner works on Linux. Elsewhere New succeeds and Check and Run
// return an error wrapping errors.ErrUnsupported, so the rest of a program
// builds and runs, and a scenario that needs the sandbox reports itself
// unavailable.
package sandbox
