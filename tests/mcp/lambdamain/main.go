// Command lambdamain is the smallest Lambda main of the tool server: its
// handler alone behind the API Gateway REST proxy adapter. The tests build
// it to measure the binary size and the cold init time of the tool
// server's own Lambda; the production main (functions/mcp) is the lead's
// and wires the same two calls.
package main

import (
	"log"
	"os"

	"github.com/agentplane/agentplane/shared/domains/toolserver"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

func main() {
	svc, err := toolserver.New(toolserver.Options{DefaultEndpoint: os.Getenv(toolserver.EnvEndpoint)})
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(httpadapter.New(svc.Handler()).ProxyWithContext)
}
