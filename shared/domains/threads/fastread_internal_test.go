package threads

// Every test of the package (the HTTP API tests included: they link into
// the same binary) renders each fast read the general way too and fails
// on any byte of difference.
func init() { checkFastReads = true }
