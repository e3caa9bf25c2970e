package deployments

import (
	"fmt"
	"github.com/agentplane/agentplane/shared/kernel/fault"
	"math"
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode"

	"github.com/agentplane/agentplane/shared/kernel/web"
	"github.com/distribution/reference"
)

// Request shapes. Pointers tell absent or null from a value; the decoder is
// strict, so unknown keys are 422 extra_forbidden with their loc.

type secretIn struct {
	Name  *string `json:"name"`
	Value *string `json:"value"`
}

// DeploymentRequest is the body of both POST and PATCH. On PATCH, Name and
// Source are immutable; they are decoded only to answer with a clear
// "immutable" error instead of "extra field".
type DeploymentRequest struct {
	Name                 *string               `json:"name"`
	Source               *string               `json:"source"`
	SourceConfig         *SourceConfig         `json:"source_config"`
	SourceRevisionConfig *SourceRevisionConfig `json:"source_revision_config"`
	Secrets              *[]secretIn           `json:"secrets"`
	ImageVersion         *string               `json:"image_version"`
}

// Limits the interface leaves open.
const (
	maxNameLen       = 128
	maxSecrets       = 100
	maxSecretName    = 256
	maxSecretValue   = 32 << 10
	maxCommandLen    = 4096
	maxImageVersion  = 128
	maxConfigPathLen = 1024
	maxRefLen        = 255
	maxScale         = 1000
	maxMemoryMB      = 1 << 20
	maxStorageGi     = 1 << 16
	maxDBConnections = 100000
)

var (
	deploymentTypes  = []string{"dev_free", "dev", "prod"}
	pullPolicies     = []string{"Always", "Never", "IfNotPresent"}
	restartPolicies  = []string{"Always", "OnFailure"}
	mountPropagation = []string{"None", "HostToContainer", "Bidirectional"}

	dnsLabelRe   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	cIdentRe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	qualifiedRe  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	labelValueRe = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

func loc(parts ...any) []any { return parts }

func with(base []any, parts ...any) []any {
	out := make([]any, 0, len(base)+len(parts))
	return append(append(out, base...), parts...)
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if a == v {
			return true
		}
	}
	return false
}

func enumMsg(allowed []string) string {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = "'" + a + "'"
	}
	if len(q) == 1 {
		return "Input should be " + q[0]
	}
	return "Input should be " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// hasControl reports control characters other than tab, and the
// invisible ones that change how text reads: bidirectional overrides and
// isolates (U+202A..U+202E, U+2066..U+2069), marks, zero-width characters
// and the other format characters (Cf), and line and paragraph
// separators. A name holding U+202E can display as a different name.
func hasControl(s string) bool {
	for _, r := range s {
		if (unicode.IsControl(r) && r != '\t') || invisible(r) {
			return true
		}
	}
	return false
}

// invisible reports format characters (Unicode category Cf: bidi
// controls, zero-width characters, soft hyphen, BOM, ...) and the line and
// paragraph separators.
func invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

func isDNSLabel(s string) bool { return len(s) <= 63 && dnsLabelRe.MatchString(s) }

func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isDNSLabel(l) {
			return false
		}
	}
	return true
}

// isQualifiedName is a Kubernetes label or annotation key: an optional DNS
// subdomain prefix and "/", then a name of at most 63 characters.
func isQualifiedName(s string) bool {
	name := s
	if i := strings.LastIndex(s, "/"); i >= 0 {
		if !isDNSSubdomain(s[:i]) {
			return false
		}
		name = s[i+1:]
	}
	return name != "" && len(name) <= 63 && qualifiedRe.MatchString(name)
}

// checkName validates a deployment name.
func checkName(p *fault.Problems, l []any, name *string) string {
	if name == nil {
		p.Add(l, "Field required", "missing")
		return ""
	}
	n := strings.TrimSpace(*name)
	switch {
	case n == "":
		p.Add(l, "String should have at least 1 character", "string_too_short")
	case len(n) > maxNameLen:
		p.Add(l, fmt.Sprintf("String should have at most %d characters", maxNameLen), "string_too_long")
	case hasControl(n) || strings.ContainsRune(n, '\t'):
		p.Add(l, "Name must not contain control characters or invisible format characters (such as bidirectional overrides)", "value_error")
	}
	return n
}

// checkRepoRef validates a branch name or a refs/tags/ ref (git's
// check-ref-format rules, simplified).
func checkRepoRef(p *fault.Problems, l []any, ref string) {
	name := ref
	if strings.HasPrefix(ref, "refs/") {
		t, ok := strings.CutPrefix(ref, "refs/tags/")
		if !ok {
			p.Add(l, "A branch is given as its bare name (for example main); a tag as its full ref path refs/tags/<tag>", "value_error")
			return
		}
		name = t
	}
	bad := name == "" || len(ref) > maxRefLen || name == "@" ||
		strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.HasSuffix(name, ".") ||
		strings.HasSuffix(name, ".lock") || strings.Contains(name, "..") || strings.Contains(name, "//") ||
		strings.Contains(name, "@{") || strings.ContainsAny(name, " ~^:?*[\\\x7f")
	for _, c := range strings.Split(name, "/") {
		if strings.HasPrefix(c, ".") {
			bad = true
		}
	}
	for _, r := range name {
		if r < 0x20 {
			bad = true
		}
	}
	if bad {
		p.Add(l, "Not a valid git branch name or refs/tags/ ref", "value_error")
	}
}

// isTagRef reports whether a repo_ref names a tag.
func isTagRef(ref *string) bool { return ref != nil && strings.HasPrefix(*ref, "refs/tags/") }

// cleanConfigPath validates graph_config_path and returns it cleaned.
func cleanConfigPath(p *fault.Problems, l []any, raw string) string {
	if raw == "" || len(raw) > maxConfigPathLen || hasControl(raw) || strings.Contains(raw, "\\") {
		p.Add(l, "graph_config_path must be a non-empty relative path to a JSON file", "value_error")
		return raw
	}
	c := path.Clean(raw)
	if strings.HasPrefix(raw, "/") || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		p.Add(l, "graph_config_path must be relative to the repository root and stay inside it", "value_error")
		return raw
	}
	if !strings.HasSuffix(c, ".json") {
		p.Add(l, "graph_config_path must name a .json file (for example langgraph.json)", "value_error")
	}
	return c
}

// checkImageRef validates an OCI image reference.
func checkImageRef(p *fault.Problems, l []any, s string) {
	if s == "" {
		p.Add(l, "Image reference must not be empty", "value_error")
		return
	}
	if _, err := reference.ParseNormalizedNamed(s); err != nil {
		p.Add(l, "Not a valid OCI image reference: "+err.Error(), "value_error")
	}
}

func checkHTTPURL(p *fault.Problems, l []any, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s) > 2048 || hasControl(s) {
		p.Add(l, "Input should be an absolute http or https URL", "url_parsing")
	}
}

func checkUUID(p *fault.Problems, l []any, s *string) {
	if s == nil {
		return
	}
	id, err := web.ParseUUID(*s)
	if err != nil {
		p.Add(l, "Input should be a valid UUID, "+err.Error(), "uuid_parsing")
		return
	}
	*s = id
}

func checkCommand(p *fault.Problems, l []any, s *string) {
	if s == nil {
		return
	}
	if *s == "" || len(*s) > maxCommandLen || strings.ContainsRune(*s, 0) {
		p.Add(l, fmt.Sprintf("A command must have 1 to %d characters", maxCommandLen), "value_error")
	}
}

func checkImageVersion(p *fault.Problems, l []any, s *string) {
	if s == nil {
		return
	}
	if *s == "" || len(*s) > maxImageVersion || strings.ContainsFunc(*s, unicode.IsSpace) || hasControl(*s) {
		p.Add(l, fmt.Sprintf("image_version must have 1 to %d characters without spaces", maxImageVersion), "value_error")
	}
}

// secretInput is a validated secret of a request. Keep means the request
// sent the Redacted value back: keep the stored value.
type secretInput struct {
	Name  string
	Value string
	Keep  bool
}

func checkSecrets(p *fault.Problems, l []any, in []secretIn) []secretInput {
	if len(in) > maxSecrets {
		p.Add(l, fmt.Sprintf("List should have at most %d items", maxSecrets), "too_long")
		return nil
	}
	seen := map[string]bool{}
	out := make([]secretInput, 0, len(in))
	for i, s := range in {
		el := with(l, i)
		ok := true
		if s.Name == nil {
			p.Add(with(el, "name"), "Field required", "missing")
			ok = false
		} else if len(*s.Name) > maxSecretName || !cIdentRe.MatchString(*s.Name) {
			p.Add(with(el, "name"), "A secret name is an environment variable name: letters, digits and _, not starting with a digit", "value_error")
			ok = false
		} else if seen[*s.Name] {
			p.Add(with(el, "name"), "Duplicate secret name "+*s.Name, "value_error")
			ok = false
		}
		if s.Value == nil {
			p.Add(with(el, "value"), "Field required", "missing")
			ok = false
		} else if len(*s.Value) > maxSecretValue {
			p.Add(with(el, "value"), fmt.Sprintf("A secret value may have at most %d bytes", maxSecretValue), "string_too_long")
			ok = false
		}
		if ok {
			seen[*s.Name] = true
			out = append(out, secretInput{Name: *s.Name, Value: *s.Value, Keep: *s.Value == Redacted})
		}
	}
	return out
}

// onlyFor rejects a non-null field that belongs to the other source.
func onlyFor(p *fault.Problems, l []any, set bool, src Source) {
	if set {
		p.Add(l, fmt.Sprintf("This field applies only to %s deployments", src), "value_error")
	}
}

func immutable(p *fault.Problems, l []any, set bool) {
	if set {
		p.Add(l, "This field cannot be changed after the deployment is created", "immutable")
	}
}

func readOnly(p *fault.Problems, l []any, set bool) {
	if set {
		p.Add(l, "This field is read-only", "read_only")
	}
}

// checkSourceConfig validates the source-specific fields of a create (all
// fields) or a patch (only the mutable ones may be set).
func checkSourceConfig(p *fault.Problems, src Source, sc *SourceConfig, create bool) {
	l := loc("body", "source_config")
	if !create {
		immutable(p, with(l, "integration_id"), sc.IntegrationID != nil)
		immutable(p, with(l, "repo_url"), sc.RepoURL != nil)
		immutable(p, with(l, "deployment_type"), sc.DeploymentType != nil)
		immutable(p, with(l, "listener_id"), sc.ListenerID != nil)
		immutable(p, with(l, "listener_config"), sc.ListenerConfig != nil)
	}
	switch src {
	case SourceRepoHost:
		if create {
			checkUUID(p, with(l, "integration_id"), sc.IntegrationID)
			if sc.RepoURL == nil {
				p.Add(with(l, "repo_url"), "Field required for repo_host deployments", "missing")
			}
			if sc.DeploymentType != nil && !oneOf(*sc.DeploymentType, deploymentTypes) {
				p.Add(with(l, "deployment_type"), enumMsg(deploymentTypes), "enum")
			}
			onlyFor(p, with(l, "listener_id"), sc.ListenerID != nil, SourceExternalContainer)
			onlyFor(p, with(l, "listener_config"), sc.ListenerConfig != nil, SourceExternalContainer)
		}
		if sc.CustomURL != nil {
			p.Add(with(l, "custom_url"), "custom_url is set automatically for repo_host deployments and is read-only", "read_only")
		}
		onlyFor(p, with(l, "resource_spec"), sc.ResourceSpec != nil, SourceExternalContainer)
		checkCommand(p, with(l, "install_command"), sc.InstallCommand)
		checkCommand(p, with(l, "build_command"), sc.BuildCommand)
	case SourceExternalContainer:
		if create {
			onlyFor(p, with(l, "integration_id"), sc.IntegrationID != nil, SourceRepoHost)
			onlyFor(p, with(l, "repo_url"), sc.RepoURL != nil, SourceRepoHost)
			onlyFor(p, with(l, "deployment_type"), sc.DeploymentType != nil, SourceRepoHost)
			checkUUID(p, with(l, "listener_id"), sc.ListenerID)
			if lc := sc.ListenerConfig; lc != nil {
				if sc.ListenerID == nil {
					p.Add(with(l, "listener_config"), "listener_config needs a listener_id", "value_error")
				}
				if lc.K8sNamespace != nil && !isDNSLabel(*lc.K8sNamespace) {
					p.Add(with(l, "listener_config", "k8s_namespace"), "A namespace is a DNS label: at most 63 lower-case letters, digits and -", "value_error")
				}
			}
		}
		onlyFor(p, with(l, "build_on_push"), sc.BuildOnPush != nil, SourceRepoHost)
		onlyFor(p, with(l, "install_command"), sc.InstallCommand != nil, SourceRepoHost)
		onlyFor(p, with(l, "build_command"), sc.BuildCommand != nil, SourceRepoHost)
		if sc.CustomURL != nil {
			checkHTTPURL(p, with(l, "custom_url"), *sc.CustomURL)
		}
		if sc.ResourceSpec != nil {
			checkResourceSpec(p, with(l, "resource_spec"), sc.ResourceSpec)
		}
	}
}

// checkRevisionConfig validates source_revision_config and cleans
// graph_config_path.
func checkRevisionConfig(p *fault.Problems, src Source, rc *SourceRevisionConfig) {
	l := loc("body", "source_revision_config")
	readOnly(p, with(l, "repo_commit_sha"), rc.RepoCommitSHA != nil)
	switch src {
	case SourceRepoHost:
		onlyFor(p, with(l, "image_uri"), rc.ImageURI != nil, SourceExternalContainer)
		if rc.RepoRef != nil {
			checkRepoRef(p, with(l, "repo_ref"), *rc.RepoRef)
		}
		if rc.GraphConfigPath != nil {
			c := cleanConfigPath(p, with(l, "graph_config_path"), *rc.GraphConfigPath)
			rc.GraphConfigPath = &c
		}
	case SourceExternalContainer:
		onlyFor(p, with(l, "repo_ref"), rc.RepoRef != nil, SourceRepoHost)
		onlyFor(p, with(l, "graph_config_path"), rc.GraphConfigPath != nil, SourceRepoHost)
		if rc.ImageURI != nil {
			checkImageRef(p, with(l, "image_uri"), *rc.ImageURI)
		}
	}
}

// cpu validates a CPU value within [lo, hi] and rounds it to one decimal.
func cpu(p *fault.Problems, l []any, v *float64, lo, hi float64) {
	if v == nil {
		return
	}
	if *v < lo || *v > hi {
		p.Add(l, fmt.Sprintf("CPU must be between %g and %g cores", lo, hi), "value_error")
		return
	}
	r := math.Round(*v*10) / 10
	*v = r
}

func intRange(p *fault.Problems, l []any, v *int64, lo, hi int64) {
	if v != nil && (*v < lo || *v > hi) {
		p.Add(l, fmt.Sprintf("Input should be between %d and %d", lo, hi), "value_error")
	}
}

func defFloat(dst **float64, src *float64, factor float64) {
	if *dst == nil && src != nil {
		v := math.Round(*src*factor*10) / 10
		*dst = &v
	}
}

func defInt(dst **int64, src *int64, factor int64) {
	if *dst == nil && src != nil {
		v := *src * factor
		*dst = &v
	}
}

func atLeastF(p *fault.Problems, l []any, limit, req *float64, what string) {
	if limit != nil && req != nil && *limit < *req {
		p.Add(l, fmt.Sprintf("The limit must be at least the request (%s)", what), "value_error")
	}
}

func atLeastI(p *fault.Problems, l []any, limit, req *int64, what string) {
	if limit != nil && req != nil && *limit < *req {
		p.Add(l, fmt.Sprintf("The limit must be at least the request (%s)", what), "value_error")
	}
}

// checkResourceSpec validates a resource spec, rounds CPU values to one
// decimal and fills the documented defaults: limits 2x their request (the
// in-memory store's memory limit equals its request), queue values those of
// the API server.
func checkResourceSpec(p *fault.Problems, l []any, rs *ResourceSpec) {
	before := p.Len()
	intRange(p, with(l, "min_scale"), rs.MinScale, 0, maxScale)
	intRange(p, with(l, "max_scale"), rs.MaxScale, 1, maxScale)
	intRange(p, with(l, "queue_min_scale"), rs.QueueMinScale, 0, maxScale)
	intRange(p, with(l, "queue_max_scale"), rs.QueueMaxScale, 1, maxScale)
	for _, f := range []struct {
		name string
		v    *float64
		hi   float64
	}{
		{"cpu", rs.CPU, 8}, {"cpu_limit", rs.CPULimit, 16},
		{"queue_cpu", rs.QueueCPU, 8}, {"queue_cpu_limit", rs.QueueCPULimit, 16},
		{"redis_cpu", rs.RedisCPU, 8}, {"redis_cpu_limit", rs.RedisCPULimit, 16},
		{"db_cpu", rs.DBCPU, 8}, {"db_cpu_limit", rs.DBCPULimit, 16},
	} {
		cpu(p, with(l, f.name), f.v, 0.1, f.hi)
	}
	for _, f := range []struct {
		name string
		v    *int64
		hi   int64
	}{
		{"memory_mb", rs.MemoryMB, maxMemoryMB}, {"memory_limit_mb", rs.MemoryLimitMB, 2 * maxMemoryMB},
		{"queue_memory_mb", rs.QueueMemoryMB, maxMemoryMB}, {"queue_memory_limit_mb", rs.QueueMemoryLimitMB, 2 * maxMemoryMB},
		{"redis_memory_mb", rs.RedisMemoryMB, maxMemoryMB}, {"redis_memory_limit_mb", rs.RedisMemoryLimitMB, 2 * maxMemoryMB},
		{"db_memory_mb", rs.DBMemoryMB, maxMemoryMB}, {"db_memory_limit_mb", rs.DBMemoryLimitMB, 2 * maxMemoryMB},
		{"db_storage_gi", rs.DBStorageGi, maxStorageGi}, {"db_max_connections", rs.DBMaxConnections, maxDBConnections},
	} {
		intRange(p, with(l, f.name), f.v, 1, f.hi)
	}
	if p.Len() > before {
		return
	}
	if rs.MinScale != nil && rs.MaxScale != nil && *rs.MinScale > *rs.MaxScale {
		p.Add(with(l, "min_scale"), "min_scale must not exceed max_scale", "value_error")
	}
	defInt(&rs.QueueMinScale, rs.MinScale, 1)
	defInt(&rs.QueueMaxScale, rs.MaxScale, 1)
	if rs.QueueMinScale != nil && rs.QueueMaxScale != nil && *rs.QueueMinScale > *rs.QueueMaxScale {
		p.Add(with(l, "queue_min_scale"), "queue_min_scale must not exceed queue_max_scale", "value_error")
	}
	defFloat(&rs.CPULimit, rs.CPU, 2)
	defInt(&rs.MemoryLimitMB, rs.MemoryMB, 2)
	defFloat(&rs.QueueCPU, rs.CPU, 1)
	defFloat(&rs.QueueCPULimit, rs.QueueCPU, 2)
	defInt(&rs.QueueMemoryMB, rs.MemoryMB, 1)
	defInt(&rs.QueueMemoryLimitMB, rs.QueueMemoryMB, 2)
	defFloat(&rs.RedisCPULimit, rs.RedisCPU, 2)
	defInt(&rs.RedisMemoryLimitMB, rs.RedisMemoryMB, 1)
	defFloat(&rs.DBCPULimit, rs.DBCPU, 2)
	defInt(&rs.DBMemoryLimitMB, rs.DBMemoryMB, 2)
	atLeastF(p, with(l, "cpu_limit"), rs.CPULimit, rs.CPU, "cpu")
	atLeastI(p, with(l, "memory_limit_mb"), rs.MemoryLimitMB, rs.MemoryMB, "memory_mb")
	atLeastF(p, with(l, "queue_cpu_limit"), rs.QueueCPULimit, rs.QueueCPU, "queue_cpu")
	atLeastI(p, with(l, "queue_memory_limit_mb"), rs.QueueMemoryLimitMB, rs.QueueMemoryMB, "queue_memory_mb")
	atLeastF(p, with(l, "redis_cpu_limit"), rs.RedisCPULimit, rs.RedisCPU, "redis_cpu")
	atLeastI(p, with(l, "redis_memory_limit_mb"), rs.RedisMemoryLimitMB, rs.RedisMemoryMB, "redis_memory_mb")
	atLeastF(p, with(l, "db_cpu_limit"), rs.DBCPULimit, rs.DBCPU, "db_cpu")
	atLeastI(p, with(l, "db_memory_limit_mb"), rs.DBMemoryLimitMB, rs.DBMemoryMB, "db_memory_mb")

	for k, v := range rs.Labels {
		if !isQualifiedName(k) {
			p.Add(with(l, "labels", k), "Not a valid label key (an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ or .)", "value_error")
		} else if len(v) > 63 || !labelValueRe.MatchString(v) {
			p.Add(with(l, "labels", k), "Not a valid label value (at most 63 letters, digits, -, _ or ., starting and ending alphanumeric)", "value_error")
		}
	}
	for k := range rs.Annotations {
		if !isQualifiedName(k) {
			p.Add(with(l, "annotations", k), "Not a valid annotation key (an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ or .)", "value_error")
		}
	}
	if rs.ServiceAccountName != nil && !isDNSSubdomain(*rs.ServiceAccountName) {
		p.Add(with(l, "service_account_name"), "A service account name is a DNS subdomain (lower-case letters, digits, - and .)", "value_error")
	}
	for i, ref := range rs.ImagePullSecrets {
		nl := with(l, "image_pull_secrets", i, "name")
		if ref.Name == nil {
			p.Add(nl, "Field required", "missing")
		} else if !isDNSSubdomain(*ref.Name) {
			p.Add(nl, "A secret name is a DNS subdomain (lower-case letters, digits, - and .)", "value_error")
		}
	}
	volumes := map[string]bool{}
	for i, v := range rs.Volumes {
		nl := with(l, "volumes", i, "name")
		switch {
		case v.Name == nil:
			p.Add(nl, "Field required", "missing")
		case !isDNSLabel(*v.Name):
			p.Add(nl, "A volume name is a DNS label: at most 63 lower-case letters, digits and -", "value_error")
		case volumes[*v.Name]:
			p.Add(nl, "Duplicate volume name "+*v.Name+": volume names are unique in the pod", "value_error")
		default:
			volumes[*v.Name] = true
		}
	}
	checkMounts(p, with(l, "volume_mounts"), rs.VolumeMounts, volumes)
	names := map[string]bool{}
	for _, group := range []struct {
		key  string
		list []Container
	}{{"init_containers", rs.InitContainers}, {"sidecars", rs.Sidecars}} {
		for i := range group.list {
			checkContainer(p, with(l, group.key, i), &group.list[i], volumes, names)
		}
	}
}

func checkMounts(p *fault.Problems, l []any, mounts []VolumeMount, volumes map[string]bool) {
	for i, m := range mounts {
		el := with(l, i)
		if m.Name == nil {
			p.Add(with(el, "name"), "Field required", "missing")
		} else if !volumes[*m.Name] {
			p.Add(with(el, "name"), "No volume named "+*m.Name+": every volume mount must name a volume of resource_spec.volumes", "value_error")
		}
		if m.MountPath == nil {
			p.Add(with(el, "mountPath"), "Field required", "missing")
		} else if *m.MountPath == "" || hasControl(*m.MountPath) {
			p.Add(with(el, "mountPath"), "mountPath must not be empty", "value_error")
		}
		if m.MountPropagation != nil && !oneOf(*m.MountPropagation, mountPropagation) {
			p.Add(with(el, "mountPropagation"), enumMsg(mountPropagation), "enum")
		}
		for _, sp := range []struct {
			key string
			v   *string
		}{{"subPath", m.SubPath}, {"subPathExpr", m.SubPathExpr}} {
			if sp.v != nil && (strings.HasPrefix(*sp.v, "/") || strings.Contains("/"+*sp.v+"/", "/../")) {
				p.Add(with(el, sp.key), sp.key+" must be a relative path without .. segments", "value_error")
			}
		}
		if m.SubPath != nil && m.SubPathExpr != nil && *m.SubPath != "" && *m.SubPathExpr != "" {
			p.Add(with(el, "subPathExpr"), "subPath and subPathExpr are mutually exclusive", "value_error")
		}
	}
}

func checkContainer(p *fault.Problems, l []any, c *Container, volumes, names map[string]bool) {
	switch {
	case c.Name == nil:
		p.Add(with(l, "name"), "Field required", "missing")
	case !isDNSLabel(*c.Name):
		p.Add(with(l, "name"), "A container name is a DNS label: at most 63 lower-case letters, digits and -", "value_error")
	case names[*c.Name]:
		p.Add(with(l, "name"), "Duplicate container name "+*c.Name+": container names are unique in the pod", "value_error")
	default:
		names[*c.Name] = true
	}
	if c.Image == nil {
		p.Add(with(l, "image"), "Field required", "missing")
	} else {
		checkImageRef(p, with(l, "image"), *c.Image)
	}
	if c.ImagePullPolicy != nil && !oneOf(*c.ImagePullPolicy, pullPolicies) {
		p.Add(with(l, "imagePullPolicy"), enumMsg(pullPolicies), "enum")
	}
	if c.RestartPolicy != nil && !oneOf(*c.RestartPolicy, restartPolicies) {
		p.Add(with(l, "restartPolicy"), enumMsg(restartPolicies), "enum")
	}
	for i := range c.Env {
		e := &c.Env[i]
		el := with(l, "env", i)
		if e.Name == nil {
			p.Add(with(el, "name"), "Field required", "missing")
		} else if !cIdentRe.MatchString(*e.Name) {
			p.Add(with(el, "name"), "An environment variable name is a C identifier: letters, digits and _, not starting with a digit", "value_error")
		}
		if e.Value == nil {
			empty := ""
			e.Value = &empty
		}
		if e.ValueFrom != nil && *e.Value != "" {
			p.Add(with(el, "valueFrom"), "valueFrom may not be used when value is not empty", "value_error")
		}
	}
	if r := c.Resources; r != nil {
		for _, m := range []struct {
			key string
			v   map[string]string
		}{{"limits", r.Limits}, {"requests", r.Requests}} {
			for k, v := range m.v {
				if k == "" || v == "" {
					p.Add(with(l, "resources", m.key), "Resource names and quantities must not be empty", "value_error")
				}
			}
		}
	}
	checkMounts(p, with(l, "volumeMounts"), c.VolumeMounts, volumes)
}
