// Command controlplane is the Lambda function of the "controlplane" route group
// (shared/routes), served behind API Gateway (REST API, proxy integration).
package main

import "github.com/agentplane/agentplane/shared/kernel/lambdaproxy"

const group = "controlplane"

func main() { lambdaproxy.ServeGroup(group) }
