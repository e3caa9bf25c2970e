// Command controlplane is the Lambda function of the "controlplane" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/controlplanegroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/controlplanegroup"
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
)

func main() { lambdarun.Run(controlplanegroup.Group) }
