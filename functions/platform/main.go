// Command platform is the Lambda function of the "platform" route group
// (shared/routes), served behind API Gateway (REST API, proxy integration).
package main

import "github.com/agentplane/agentplane/shared/kernel/lambdaproxy"

const group = "platform"

func main() { lambdaproxy.ServeGroup(group) }
