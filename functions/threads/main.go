// Command threads is the Lambda function of the "threads" route group
// (shared/routes), served behind API Gateway (REST API, proxy integration).
package main

import "github.com/agentplane/agentplane/shared/kernel/lambdaproxy"

const group = "threads"

func main() { lambdaproxy.ServeGroup(group) }
