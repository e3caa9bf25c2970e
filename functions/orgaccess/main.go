// Command orgaccess is the Lambda function of the "orgaccess" route group
// (shared/routes), served behind API Gateway (REST API, proxy integration).
package main

import (
	"context"
	"log"

	"github.com/agentplane/agentplane/shared/lambdaproxy"
	"github.com/agentplane/agentplane/shared/server"
)

const group = "orgaccess"

func main() {
	cfg, err := server.ConfigFromEnv()
	if err != nil {
		log.Fatalf("%s: configuration: %v", group, err)
	}
	app, err := server.New(context.Background(), cfg)
	if err != nil {
		log.Fatalf("%s: start: %v", group, err)
	}
	h, err := app.GroupHandler(group)
	if err != nil {
		log.Fatalf("%s: %v", group, err)
	}
	lambdaproxy.Start(h)
}
