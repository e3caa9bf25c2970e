// Command lambdazip writes a Lambda deployment package: a zip holding the
// given files at its root, executable (0755), with a fixed modification
// time, so the same binary always gives the same zip (and the same CDK
// asset hash).
//
// Usage: lambdazip out.zip file...
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// epoch is the earliest time a zip header can hold (MS-DOS date).
var epoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: lambdazip out.zip file...")
		os.Exit(2)
	}
	if err := write(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "lambdazip:", err)
		os.Exit(1)
	}
}

func write(out string, files []string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".lambdazip-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := zip.NewWriter(tmp)
	for _, name := range files {
		if err := add(zw, name); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

func add(zw *zip.Writer, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", name)
	}
	h := &zip.FileHeader{Name: filepath.Base(name), Method: zip.Deflate, Modified: epoch}
	// The Lambda runtime executes bootstrap directly: it must keep its
	// execute bits inside the zip.
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, f)
	return err
}
