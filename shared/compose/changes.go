package compose

import "sync"

// Changes carries "this record changed" from the module that writes it to
// the caches of other modules built over the same Platform, so a cache in
// the local all-in-one process (where the control plane and the thread API
// share the Platform) never serves a record after its writer changed it.
// Across processes (one Lambda per group) nothing is carried: there each
// cache bounds its staleness by its TTL (Config.CacheTTL).
type Changes struct {
	mu          sync.RWMutex
	deployments []func(id string)
}

// OnDeployment subscribes f to the deployments written from now on.
func (c *Changes) OnDeployment(f func(id string)) {
	c.mu.Lock()
	c.deployments = append(c.deployments, f)
	c.mu.Unlock()
}

// DeploymentChanged tells every subscriber that deployment id was written
// (called by the control plane after each write of a deployment record).
func (c *Changes) DeploymentChanged(id string) {
	c.mu.RLock()
	subs := c.deployments
	c.mu.RUnlock()
	for _, f := range subs {
		f(id)
	}
}
