// Command tracing is the Lambda function of the "tracing" route group: its
// API Gateway routes, its ingest queue and its scheduled sweep
// (shared/compose/tracinggroup).
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/tracinggroup"
)

func main() { lambdarun.Run(tracinggroup.Group) }
