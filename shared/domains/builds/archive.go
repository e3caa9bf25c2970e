package builds

import (
	"archive/tar"
	"compress/gzip"
	"io"
)

// archiveWriter writes a gzipped tar.
type archiveWriter struct {
	gz *gzip.Writer
	tw *tar.Writer
}

func newArchiveWriter(w io.Writer) (*archiveWriter, error) {
	gz := gzip.NewWriter(w)
	return &archiveWriter{gz: gz, tw: tar.NewWriter(gz)}, nil
}

func (a *archiveWriter) add(hdr *tar.Header, r io.Reader) error {
	if err := a.tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeReg {
		_, err := io.CopyN(a.tw, r, hdr.Size)
		return err
	}
	return nil
}

func (a *archiveWriter) close() error {
	if err := a.tw.Close(); err != nil {
		return err
	}
	return a.gz.Close()
}
