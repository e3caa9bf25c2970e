// Command orgaccess is the Lambda function of the "orgaccess" route group
// (shared/routes), served behind API Gateway (REST API, proxy integration).
package main

import "github.com/agentplane/agentplane/shared/kernel/lambdaproxy"

const group = "orgaccess"

func main() { lambdaproxy.ServeGroup(group) }
