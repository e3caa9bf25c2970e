// Package uigroup composes the "ui" route group: the web UI's page at / and
// its files under /ui/, with the build workflow's graph generated from
// builds.Definition(). It touches no store, queue or bucket.
package uigroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/builds"
	"github.com/agentplane/agentplane/shared/domains/ui"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/agentplane/agentplane/shared/kernel/workflow"
)

// Options are the UI's: the workflows it draws. A static host (the CDK
// app's S3 bucket) uploads ui.Site(Options) with its own ui/config.json.
var Options = ui.Options{Workflows: []workflow.Definition{builds.Definition()}}

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        ui.Routes.Name,
	Description: ui.Routes.Description,
	Routes:      ui.Routes.Specs(),
	Build: func(context.Context, *compose.Platform) (*compose.Module, error) {
		h, err := ui.New(Options)
		if err != nil {
			return nil, err
		}
		return &compose.Module{Mount: func(mux *web.Mux, e api.Edge) { api.Mount(mux, ui.Routes, h, e) }}, nil
	},
}
