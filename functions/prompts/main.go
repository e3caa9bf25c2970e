// Command prompts is the Lambda function of the "prompts" route group: its API
// Gateway routes, its queue and its scheduled sweep (shared/compose/promptsgroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/promptsgroup"
)

func main() { lambdarun.Run(promptsgroup.Group) }
