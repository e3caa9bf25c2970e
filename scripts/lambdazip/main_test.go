package main

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteIsExecutableAndReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	content := bytes.Repeat([]byte("\x7fELF fake binary "), 100)
	if err := os.WriteFile(bin, content, 0o600); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.zip"), filepath.Join(dir, "b.zip")
	if err := write(a, []string{bin}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(bin, epoch.AddDate(40, 0, 0), epoch.AddDate(40, 0, 0)); err != nil {
		t.Fatal(err)
	}
	if err := write(b, []string{bin}); err != nil {
		t.Fatal(err)
	}
	ra, _ := os.ReadFile(a)
	rb, _ := os.ReadFile(b)
	if !bytes.Equal(ra, rb) {
		t.Error("the same input gave two different zips")
	}
	zr, err := zip.OpenReader(a)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" {
		t.Fatalf("entries %v", zr.File)
	}
	if m := zr.File[0].Mode(); m.Perm() != 0o755 || !m.IsRegular() {
		t.Errorf("mode %v", m)
	}
	rc, _ := zr.File[0].Open()
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, content) {
		t.Error("content differs")
	}
}

func TestWriteRejectsMissingAndDirectories(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.zip")
	if err := write(out, []string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("missing file accepted")
	}
	if err := write(out, []string{dir}); err == nil {
		t.Error("directory accepted")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("a failed write left a zip behind")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".lambdazip-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
