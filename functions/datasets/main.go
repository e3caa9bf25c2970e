// Command datasets is the Lambda function of the "datasets" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/datasetsgroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/datasetsgroup"
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
)

func main() { lambdarun.Run(datasetsgroup.Group) }
