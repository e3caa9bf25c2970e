package toolserver

import (
	_ "embed"
	"strings"
)

// The documentation-only tools answer these guides, with {{endpoint}}
// replaced by the endpoint the caller's calls would go to.
var (
	//go:embed guides/push_prompt.md
	guidePushPrompt string
	//go:embed guides/create_dataset.md
	guideCreateDataset string
	//go:embed guides/update_examples.md
	guideUpdateExamples string
	//go:embed guides/run_experiment.md
	guideRunExperiment string
)

// renderGuide names the caller's endpoint in a guide: SERVICE-ENDPOINT
// when it is a well-formed URL, else the default endpoint.
func (s *Service) renderGuide(body string, c Credentials) string {
	endpoint := s.defaultEndpoint
	if c.Endpoint != "" {
		if _, n, err := normalizeEndpoint(c.Endpoint); err == nil {
			endpoint = n
		}
	}
	return strings.ReplaceAll(body, "{{endpoint}}", endpoint)
}
