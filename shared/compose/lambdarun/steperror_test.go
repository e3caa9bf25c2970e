package lambdarun

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/workflow"
	"github.com/agentplane/agentplane/shared/kernel/workflow/sfnstart"
)

// errorType is how aws-lambda-go names a returned error (lambda/errors.go):
// the Go type name, without package or pointer.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

func TestStepErrorNames(t *testing.T) {
	base := errors.New("registry said 503")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("push image: %w", workflow.ErrTransient), workflow.TransientErrorName},
		{fmt.Errorf("step x: %w", &sfnstart.Transient{Err: base}), workflow.TransientErrorName},
		{errors.New("bad config"), workflow.FailedErrorName},
		{&sfnstart.Failed{Err: base}, workflow.FailedErrorName},
		{fmt.Errorf("wrapped: %w", &sfnstart.Failed{Err: fmt.Errorf("x: %w", workflow.ErrTransient)}), workflow.FailedErrorName},
	} {
		got := StepError(tc.err)
		if name := errorType(got); name != tc.want {
			t.Errorf("%v: error type %s, want %s", tc.err, name, tc.want)
		}
		if got.Error() == "" {
			t.Errorf("%v: empty message", tc.err)
		}
	}
}
