// Command scim is the Lambda function of the "scim" route group
// (shared/routes), served behind API Gateway (REST API, proxy integration).
package main

import "github.com/agentplane/agentplane/shared/kernel/lambdaproxy"

const group = "scim"

func main() { lambdaproxy.ServeGroup(group) }
