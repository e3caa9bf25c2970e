// Command billing is the Lambda function of the "billing" route group: its
// API Gateway routes and its queue (shared/compose/billinggroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/billinggroup"
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
)

func main() { lambdarun.Run(billinggroup.Group) }
