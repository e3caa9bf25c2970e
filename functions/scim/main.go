// Command scim is the Lambda function of the "scim" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/scimgroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/scimgroup"
)

func main() { lambdarun.Run(scimgroup.Group) }
