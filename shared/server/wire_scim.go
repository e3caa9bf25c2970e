package server

import (
	"fmt"

	"github.com/agentplane/agentplane/shared/domains/orgaccess"
	"github.com/agentplane/agentplane/shared/domains/scim"
)

// The scim group: SCIM 2.0 at /scim/v2 over the orgaccess module's service.
func init() {
	RegisterModule("scim", func(d *Deps) (*Module, error) {
		svc, ok := d.Modules.Service("orgaccess").(*orgaccess.Service)
		if !ok {
			return nil, fmt.Errorf("the orgaccess module is not available")
		}
		return &Module{Group: "scim", Register: scim.New(svc).Register}, nil
	}, "orgaccess")
}
