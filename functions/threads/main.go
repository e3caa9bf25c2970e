// Command threads is the Lambda function of the "threads" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/threadsgroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/threadsgroup"
)

func main() { lambdarun.Run(threadsgroup.Group) }
