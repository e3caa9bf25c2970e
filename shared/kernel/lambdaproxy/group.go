package lambdaproxy

import (
	"context"
	"log"

	"github.com/agentplane/agentplane/shared/server"
)

// ServeGroup is the whole main of a route group's Lambda function: the app
// from the environment, only that group's routes, on the Lambda runtime.
// A configuration or start-up error ends the process, which Lambda reports
// as an init failure.
func ServeGroup(group string) {
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
	Start(h)
}
