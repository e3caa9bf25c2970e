// Command ui is the Lambda function of the "ui" route group: the web UI's
// page and files (shared/compose/uigroup), for installations that serve the
// UI from the API's origin rather than from a bucket.
package main

import (
	"github.com/agentplane/agentplane/shared/compose/lambdarun"
	"github.com/agentplane/agentplane/shared/compose/uigroup"
)

func main() { lambdarun.Run(uigroup.Group) }
