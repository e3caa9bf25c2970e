// Package billinggroup composes the "billing" route group: organization
// billing usage, and the consumer that records usage events.
package billinggroup

import (
	"context"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        billing.Routes.Name,
	Description: billing.Routes.Description,
	Routes:      billing.Routes.Specs(),
	Consumes:    []string{billing.TopicUsage},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		svc, err := billing.New(billing.Options{Store: p.Store, Logger: p.Log})
		if err != nil {
			return nil, err
		}
		h := billing.NewHandler(svc)
		return &compose.Module{
			Mount:     func(mux *web.Mux, e api.Edge) { api.Mount(mux, billing.Routes, h, e) },
			Consumers: map[string]compose.Consumer{billing.TopicUsage: svc.Consume},
		}, nil
	},
}
