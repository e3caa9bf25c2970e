package deployments

import (
	"github.com/agentplane/agentplane/shared/kernel/netguard"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
)

// maxRepoURL bounds repo_url.
const maxRepoURL = 2048

// CheckRepoURL validates a repository URL for an integration: with
// allowLocal, file:// URLs, absolute paths, http and https to any host;
// without, https only, to a host that is not an IP literal of a
// non-public address nor a localhost name. (Names are resolved and checked
// again when the build connects, which is what actually enforces the rule.)
// It returns "" when the URL is acceptable, else the reason.
func CheckRepoURL(raw string, allowLocal bool) string {
	if raw == "" {
		return "repo_url must not be empty"
	}
	if len(raw) > maxRepoURL {
		return "repo_url is too long"
	}
	for _, r := range raw {
		if unicode.IsControl(r) || unicode.IsSpace(r) || invisible(r) {
			return "repo_url must not contain spaces, control or format characters"
		}
	}
	hostedOnly := "Only https repository URLs are accepted (for example https://github.com/owner/repo)"
	if strings.HasPrefix(raw, "/") {
		if !allowLocal {
			return hostedOnly
		}
		if path.Clean(raw) != strings.TrimSuffix(raw, "/") && path.Clean(raw)+"/" != raw {
			return "a local repository path must be absolute and clean (no . or .. segments)"
		}
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		if allowLocal {
			return "repo_url must be an absolute URL or an absolute path"
		}
		return hostedOnly
	}
	if u.User != nil {
		return "repo_url must not contain credentials"
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "repo_url must not have a query or a fragment"
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if !allowLocal {
			return hostedOnly
		}
		if u.Host != "" && u.Host != "localhost" {
			return "a file:// URL must name a path on this machine"
		}
		if !strings.HasPrefix(u.Path, "/") || strings.Contains("/"+u.Path+"/", "/../") {
			return "a file:// URL must hold an absolute path without .. segments"
		}
		return ""
	case "http":
		if !allowLocal {
			return hostedOnly
		}
	case "https":
	default:
		if allowLocal {
			return "repo_url must be an https, http or file URL, or an absolute path"
		}
		return hostedOnly
	}
	host := u.Hostname()
	if host == "" {
		return "repo_url must name a host"
	}
	if strings.HasSuffix(u.Host, ":") {
		return "repo_url has an empty port"
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "repo_url's port must be 1 to 65535"
		}
	}
	if allowLocal {
		return ""
	}
	lower := strings.ToLower(strings.TrimSuffix(host, "."))
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return "repo_url must name a public host"
	}
	if a, err := netip.ParseAddr(host); err == nil && !PublicAddr(a) {
		return "repo_url must name a public host"
	}
	return ""
}

// PublicAddr reports whether a is a public unicast address (the kernel's
// one outbound-address rule, shared with the build's dialer and the tool
// server).
func PublicAddr(a netip.Addr) bool { return netguard.PublicAddr(a) }

// normalizeRepoURL maps the spellings of one repository to one key, so a
// push webhook (which names the repository as clone_url, html_url or
// ssh_url) finds the deployments built from it: scheme and credentials,
// a trailing ".git" and slashes are dropped, and the host is lower-cased.
func normalizeRepoURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if strings.HasPrefix(raw, "/") {
		return "file:" + strings.TrimSuffix(strings.TrimSuffix(path.Clean(raw), "/.git"), ".git")
	}
	// scp-like ssh form: git@host:owner/repo.git
	if at := strings.Index(raw, "@"); at >= 0 && !strings.Contains(raw, "://") {
		if colon := strings.Index(raw[at:], ":"); colon > 0 {
			raw = "ssh://" + raw[:at+colon] + "/" + raw[at+colon+1:]
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, ".git")
	if strings.EqualFold(u.Scheme, "file") {
		return "file:" + strings.TrimSuffix(path.Clean("/"+p), "/")
	}
	return strings.ToLower(u.Host) + p
}
