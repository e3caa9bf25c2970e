// Package billinggroup composes the "billing" route group: organization
// billing usage, the consumer of usage events, and the billing home's side
// of the region link. Billing records are kept only in the billing home
// region (the US); in the EU the service forwards events to the US and
// reads usage from it (docs/regions.md).
package billinggroup

import (
	"context"
	"fmt"

	"github.com/agentplane/agentplane/shared/compose"
	"github.com/agentplane/agentplane/shared/domains/billing"
	"github.com/agentplane/agentplane/shared/domains/regions"
	"github.com/agentplane/agentplane/shared/domains/regions/billinghome"
	"github.com/agentplane/agentplane/shared/kernel/api"
	"github.com/agentplane/agentplane/shared/kernel/web"
)

// Group is the declaration and builder of the group.
var Group = compose.Group{
	Name:        billing.Routes.Name,
	Description: billing.Routes.Description,
	Routes:      append(billing.Routes.Specs(), billinghome.Routes.Specs()...),
	Consumes:    []string{billing.TopicUsage},
	Build: func(_ context.Context, p *compose.Platform) (*compose.Module, error) {
		opts := billing.Options{Store: p.Store, Logger: p.Log}
		home, err := Home(p)
		if err != nil {
			return nil, err
		}
		if home != nil {
			// No store: a region that is not the billing home cannot
			// write a billing record.
			opts = billing.Options{Home: home, Logger: p.Log}
		}
		svc, err := billing.New(opts)
		if err != nil {
			return nil, err
		}
		h := billing.NewHandler(svc)
		link := billinghome.NewHandler(svc, p.Region)
		return &compose.Module{
			Mount: func(mux *web.Mux, e api.Edge) {
				api.Mount(mux, billing.Routes, h, e)
				api.Mount(mux, billinghome.Routes, link, e)
			},
			Consumers: map[string]compose.Consumer{billing.TopicUsage: svc.Consume},
		}, nil
	},
}

// Home is the billing home as seen from p's region: nil in the billing
// home itself and in self-hosted installations (which keep their own
// billing); elsewhere the US over the region link, with events sent to the
// US billing queue in AWS (AGENTPLANE_BILLING_QUEUE_URL and
// AGENTPLANE_BILLING_QUEUE_REGION) or posted to the US server locally.
func Home(p *compose.Platform) (billing.Home, error) {
	if p.Region == nil || p.Region.Name() == regions.BillingHome {
		return nil, nil
	}
	var events billinghome.Publisher
	if p.Config.Mode == compose.ModeAWS {
		if p.Config.BillingQueueURL == "" || p.Config.BillingQueueRegion == "" {
			return nil, fmt.Errorf("billing: the %s region forwards usage to the billing home's queue: set AGENTPLANE_BILLING_QUEUE_URL and AGENTPLANE_BILLING_QUEUE_REGION",
				p.Region.Name().Label())
		}
		pub, err := p.QueueIn(p.Config.BillingQueueRegion, p.Config.BillingQueueURL)
		if err != nil {
			return nil, err
		}
		events = pub
	}
	r, err := billinghome.NewRemote(p.Region, events)
	if err != nil {
		return nil, err
	}
	return r, nil
}
