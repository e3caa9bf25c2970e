//go:build unix

package toolserver_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far: benchmarks
// report it per operation, a figure that waiting for a shared machine's
// cores does not inflate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
