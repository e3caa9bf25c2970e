// Command orgaccess is the Lambda function of the "orgaccess" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/orgaccessgroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/orgaccessgroup"
)

func main() { lambdarun.Run(orgaccessgroup.Group) }
