// Package childtest runs one test of the running test binary as a child
// process, for tests whose subject must really be killed (SIGKILL) rather
// than closed.
package childtest

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
)

// Start runs the test named test (an exact name) of this test binary with
// env added to its environment, and returns the child and a scanner over
// its standard output. The child is killed when t ends, if still running.
func Start(t testing.TB, test string, env ...string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}
