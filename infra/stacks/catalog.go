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

// CatalogLayout is the layout of the product's catalog.
func CatalogLayout() (*Layout, error) {
	return NewLayout(catalog.Groups(), CatalogWorkflows())
}
