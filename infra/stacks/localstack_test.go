package stacks_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/shared/kernel/store"
)

// TestLocalStackHookMatchesTheSchema keeps the LocalStack ready hook in
// step with the table the stack defines: the same secondary indexes (named
// as shared/kernel/store names them) and the same TTL attribute.
func TestLocalStackHookMatchesTheSchema(t *testing.T) {
	raw, err := os.ReadFile("../../localstack/init/ready.d/10-agentplane.sh")
	if err != nil {
		t.Fatal(err)
	}
	hook := string(raw)
	m := regexp.MustCompile(`(?m)^INDEXES="([^"]*)"$`).FindStringSubmatch(hook)
	if m == nil {
		t.Fatal(`the hook has no INDEXES="..." line`)
	}
	if got, want := m[1], strings.Join(store.IndexNames, " "); got != want {
		t.Errorf("hook indexes %q, shared/kernel/store.IndexNames %q", got, want)
	}
	for _, ix := range store.IndexNames {
		if store.IndexPKAttr(ix) != ix+"pk" || store.IndexSKAttr(ix) != ix+"sk" {
			t.Errorf("index %s keys are %s/%s; the hook writes ${ix}pk/${ix}sk", ix, store.IndexPKAttr(ix), store.IndexSKAttr(ix))
		}
	}
	for _, want := range []string{
		`"AttributeName":"` + store.AttrPK + `","KeyType":"HASH"`,
		`"AttributeName":"` + store.AttrSK + `","KeyType":"RANGE"`,
		"AttributeName=" + store.AttrTTL,
		"--billing-mode PAY_PER_REQUEST",
		`\"ProjectionType\":\"ALL\"`, // escaped inside the shell string
		"MAX_RECEIVES=5",
	} {
		if !strings.Contains(hook, want) {
			t.Errorf("the hook lacks %s", want)
		}
	}
}
