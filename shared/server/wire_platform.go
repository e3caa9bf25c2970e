package server

// The platform group: /health and the admin API of shared/domains/identity.
func init() {
	RegisterModule("platform", func(d *Deps) (*Module, error) {
		return &Module{Group: "platform", Register: d.Identity.Register, Service: d.Identity}, nil
	})
}
