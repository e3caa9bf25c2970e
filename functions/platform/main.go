// Command platform is the Lambda function of the "platform" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/platformgroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/platformgroup"
)

func main() { lambdarun.Run(platformgroup.Group) }
