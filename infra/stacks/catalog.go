package stacks

import (
	"github.com/agentplane/agentplane/shared/compose/catalog"
	"github.com/agentplane/agentplane/shared/domains/builds"
)

// CatalogWorkflows are the workflow definitions of the product, each with
// the group whose function runs its steps. A group's declaration says it
// runs steps (Uses.RunsSteps) but not which definitions: those are built
// with the group's modules, which the CDK app cannot open, so they are
// listed here; NewLayout rejects a runner or a started workflow this list
// lacks.
func CatalogWorkflows() []Workflow {
	return []Workflow{{Definition: builds.Definition(), Group: "build"}}
}

// CatalogEgress are the product's groups whose code calls endpoints that
// users name, with what they call: they run behind the NAT gateways, so
// those calls come from the published egress addresses. Every other group
// talks only to AWS services and stays out of the VPC. (A group's
// declaration does not say it; compose.Uses could.)
func CatalogEgress() map[string]string {
	return map[string]string{
		"build": "fetches the repositories and images that deployments name (git over HTTPS), in its function and its CodeBuild step",
		"mcp":   "calls the platform API at the endpoint each caller names (SERVICE-ENDPOINT), and the regions' APIs",
	}
}

// CatalogLayout is the layout of the product's catalog.
func CatalogLayout() (*Layout, error) {
	l, err := NewLayout(catalog.Groups(), CatalogWorkflows())
	if err != nil {
		return nil, err
	}
	if err := l.SetEgress(CatalogEgress()); err != nil {
		return nil, err
	}
	return l, nil
}
