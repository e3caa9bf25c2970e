package blobs_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/blobs"
	"github.com/agentplane/agentplane/shared/kernel/blobs/blobtest"
)

var ctx = context.Background()

func newDir(t *testing.T) (*blobs.DirBucket, string, string) {
	t.Helper()
	data := t.TempDir()
	root, tmp := filepath.Join(data, "blobs"), filepath.Join(data, "tmp", "blobs")
	b, err := blobs.NewDir(root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	return b, root, tmp
}

// emptySystemTemp points TMPDIR at a new empty folder for the rest of the
// test, and checks at the end that nothing was written there.
func emptySystemTemp(t *testing.T) {
	t.Helper()
	sys := filepath.Join(t.TempDir(), "system-tmp")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", sys)
	t.Cleanup(func() {
		entries, err := os.ReadDir(sys)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("written to the system temp folder: %s", e.Name())
		}
	})
}

func TestDirConformance(t *testing.T) {
	data := t.TempDir()
	// Set after t.TempDir, which itself lives in the system temp folder.
	emptySystemTemp(t)
	blobtest.Run(t, func(t *testing.T) blobs.Bucket {
		d := filepath.Join(data, strings.ReplaceAll(t.Name(), "/", "_"))
		b, err := blobs.NewDir(filepath.Join(d, "blobs"), filepath.Join(d, "tmp"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { checkPrivate(t, d) })
		return b
	})
}

// checkPrivate fails for any folder not 0700 or file not 0600 under dir,
// and for a leftover temporary file.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700 | fs.ModeDir
		}
		if p != dir && info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode(), want)
		}
		if !d.IsDir() && strings.HasPrefix(p, filepath.Join(dir, "tmp")+"/") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Private modes, also for a data folder an older version created 0755.
func TestDirModes(t *testing.T) {
	data := t.TempDir()
	root, tmp := filepath.Join(data, "blobs"), filepath.Join(data, "tmp")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := blobs.NewDir(root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/b/c/d.txt", "top", "a/x"} {
		if err := blobs.WriteAll(ctx, b, k, []byte("secret source"), ""); err != nil {
			t.Fatal(err)
		}
	}
	checkPrivate(t, data)
	for _, d := range []string{root, tmp} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, st.Mode(), err)
		}
	}
}

// A partial file a killed process left in the temporary folder is removed
// when the bucket opens, and was never visible as an object.
func TestDirRemovesLeftoversAtOpen(t *testing.T) {
	b, root, tmp := newDir(t)
	if err := blobs.WriteAll(ctx, b, "kept", []byte("whole"), ""); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"put-123456", "put-partial-dir/inner"} {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("half a tarball"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	if err := b.List(ctx, "", func(k string, _ int64) error { listed = append(listed, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(listed, ",") != "kept" {
		t.Fatalf("listed %v", listed)
	}
	b2, err := blobs.NewDir(root, tmp)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Fatalf("leftovers after open: %v", entries)
	}
	if got, err := blobs.ReadAll(ctx, b2, "kept"); err != nil || string(got) != "whole" {
		t.Fatalf("object after reopen: %q %v", got, err)
	}
}

// Deleting every object under a prefix leaves no empty folders behind,
// also when the deletes run concurrently with puts into the same folders.
func TestDirDeletePrefixLeavesNoFolders(t *testing.T) {
	b, root, _ := newDir(t)
	for _, k := range []string{"deployments/d1/revisions/r1/source.tar.gz", "deployments/d1/revisions/r1/log", "deployments/d1/revisions/r2/artifact.tar.gz", "deployments/d1/x", "deployments/d2/keep"} {
		if err := blobs.WriteAll(ctx, b, k, []byte("x"), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := blobs.DeletePrefix(ctx, b, "deployments/d1/"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "deployments", "d1")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("deployments/d1 folder still there: %v", err)
	}
	if err := blobs.DeletePrefix(ctx, b, "deployments/"); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Fatalf("root after deleting everything: %v %v", entries, err)
	}

	// Puts racing with deletes that prune the same folders never fail.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := "race/a/b/" + string(rune('a'+w)) + string(rune('a'+i%26))
				if err := blobs.WriteAll(ctx, b, k, []byte("x"), ""); err != nil {
					t.Error(err)
					return
				}
				if err := b.Delete(ctx, k); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Fatalf("root after racing puts and deletes: %v %v", entries, err)
	}
}

func TestNewDirRefusesOverlap(t *testing.T) {
	data := t.TempDir()
	for _, c := range [][2]string{
		{data + "/blobs", data + "/blobs/tmp"},
		{data + "/tmp/blobs", data + "/tmp"},
		{data + "/same", data + "/same"},
	} {
		if _, err := blobs.NewDir(c[0], c[1]); err == nil {
			t.Errorf("NewDir(%s, %s): want an error", c[0], c[1])
		}
	}
	file := filepath.Join(data, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := blobs.NewDir(file, data+"/t"); err == nil {
		t.Error("a file as root: want an error")
	}
}
