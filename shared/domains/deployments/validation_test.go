package deployments_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// merge returns a copy of base with the dotted keys set (nil deletes).
func merge(base map[string]any, set map[string]any) map[string]any {
	raw, _ := json.Marshal(base)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	for k, v := range set {
		parts := strings.Split(k, ".")
		cur := out
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		if v == nil {
			delete(cur, parts[len(parts)-1])
		} else {
			cur[parts[len(parts)-1]] = v
		}
	}
	return out
}

type problem struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// locs returns the loc paths of a 422 answer, as strings like
// "body.source_config.repo_url".
func locs(t *testing.T, r resp) []string {
	t.Helper()
	if r.Code != 422 {
		t.Fatalf("status %d, want 422: %s", r.Code, r.Body)
	}
	var v struct {
		Detail []problem `json:"detail"`
	}
	if err := json.Unmarshal([]byte(r.Body), &v); err != nil || len(v.Detail) == 0 {
		t.Fatalf("not an HTTPValidationError: %s", r.Body)
	}
	var out []string
	for _, p := range v.Detail {
		if p.Msg == "" || p.Type == "" {
			t.Fatalf("problem without msg or type: %s", r.Body)
		}
		parts := make([]string, len(p.Loc))
		for i, l := range p.Loc {
			parts[i] = fmt.Sprint(l)
		}
		out = append(out, strings.Join(parts, "."))
	}
	return out
}

func hasLoc(t *testing.T, r resp, want string) {
	t.Helper()
	got := locs(t, r)
	for _, g := range got {
		if g == want {
			return
		}
	}
	t.Fatalf("no problem at %s: %v (%s)", want, got, r.Body)
}

func TestCreateValidation(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	rh := repoHostBody("valid", repo.Dir)
	img := imageBody("valid-image")
	spec := func(s map[string]any) map[string]any {
		return merge(img, map[string]any{"source_config.resource_spec": s})
	}
	container := func(c map[string]any) map[string]any {
		base := map[string]any{"name": "side", "image": "busybox:1"}
		for k, v := range c {
			if v == nil {
				delete(base, k)
			} else {
				base[k] = v
			}
		}
		return spec(map[string]any{"sidecars": []any{base}})
	}
	cases := []struct {
		name string
		body any
		loc  string
	}{
		{"missing name", merge(rh, map[string]any{"name": nil}), "body.name"},
		{"empty name", merge(rh, map[string]any{"name": "  "}), "body.name"},
		{"long name", merge(rh, map[string]any{"name": strings.Repeat("n", 129)}), "body.name"},
		{"name with right-to-left override", merge(rh, map[string]any{"name": "invoice\u202Egpj.exe"}), "body.name"},
		{"name with bidi isolate", merge(rh, map[string]any{"name": "a\u2067b\u2069"}), "body.name"},
		{"name with left-to-right mark", merge(rh, map[string]any{"name": "agent\u200E"}), "body.name"},
		{"name with zero-width space", merge(rh, map[string]any{"name": "ag\u200Bent"}), "body.name"},
		{"name with BOM", merge(rh, map[string]any{"name": "\uFEFFagent"}), "body.name"},
		{"name with line separator", merge(rh, map[string]any{"name": "a\u2028b"}), "body.name"},
		{"null body", `null`, "body"},
		{"missing source", merge(rh, map[string]any{"source": nil}), "body.source"},
		{"unknown source", merge(rh, map[string]any{"source": "github"}), "body.source"},
		{"missing source_config", merge(rh, map[string]any{"source_config": nil}), "body.source_config"},
		{"missing source_revision_config", merge(rh, map[string]any{"source_revision_config": nil}), "body.source_revision_config"},
		{"missing secrets", merge(rh, map[string]any{"secrets": nil}), "body.secrets"},
		{"unknown field", merge(rh, map[string]any{"color": "blue"}), "body.color"},
		{"unknown nested field", merge(rh, map[string]any{"source_config.colour": 1}), "body.source_config.colour"},
		{"wrong type", merge(rh, map[string]any{"source_config.build_on_push": "yes"}), "body.source_config.build_on_push"},
		{"malformed json", `{"name": `, "body.9"},
		{"empty body", ``, "body"},
		// repo_host rules
		{"repo_url required", merge(rh, map[string]any{"source_config.repo_url": nil}), "body.source_config.repo_url"},
		{"repo_url relative", merge(rh, map[string]any{"source_config.repo_url": "agent"}), "body.source_config.repo_url"},
		{"repo_url credentials", merge(rh, map[string]any{"source_config.repo_url": "https://user:pw@github.com/a/b"}), "body.source_config.repo_url"},
		{"repo_url ssh", merge(rh, map[string]any{"source_config.repo_url": "ssh://git@github.com/a/b"}), "body.source_config.repo_url"},
		{"repo_url port 99999", merge(rh, map[string]any{"source_config.repo_url": "https://github.com:99999/a/b"}), "body.source_config.repo_url"},
		{"repo_url port 0", merge(rh, map[string]any{"source_config.repo_url": "https://github.com:0/a/b"}), "body.source_config.repo_url"},
		{"repo_url port 65536", merge(rh, map[string]any{"source_config.repo_url": "http://127.0.0.1:65536/a/b"}), "body.source_config.repo_url"},
		{"repo_url empty port", merge(rh, map[string]any{"source_config.repo_url": "https://github.com:/a/b"}), "body.source_config.repo_url"},
		{"repo_url bidi", merge(rh, map[string]any{"source_config.repo_url": "https://github.com/a/\u202Eb"}), "body.source_config.repo_url"},
		{"integration not uuid", merge(rh, map[string]any{"source_config.integration_id": "x"}), "body.source_config.integration_id"},
		{"integration unknown", merge(rh, map[string]any{"source_config.integration_id": "00000000-0000-4000-8000-000000000001"}), "body.source_config.integration_id"},
		{"deployment_type enum", merge(rh, map[string]any{"source_config.deployment_type": "serverless"}), "body.source_config.deployment_type"},
		{"custom_url read-only for repo_host", merge(rh, map[string]any{"source_config.custom_url": "https://x.example"}), "body.source_config.custom_url"},
		{"resource_spec only external", merge(rh, map[string]any{"source_config.resource_spec": map[string]any{"cpu": 1}}), "body.source_config.resource_spec"},
		{"listener_id only external", merge(rh, map[string]any{"source_config.listener_id": "00000000-0000-4000-8000-000000000001"}), "body.source_config.listener_id"},
		{"listener_config only external", merge(rh, map[string]any{"source_config.listener_config": map[string]any{"k8s_namespace": "a"}}), "body.source_config.listener_config"},
		{"image_uri only external", merge(rh, map[string]any{"source_revision_config.image_uri": "nginx"}), "body.source_revision_config.image_uri"},
		{"commit sha read-only", merge(rh, map[string]any{"source_revision_config.repo_commit_sha": "abc"}), "body.source_revision_config.repo_commit_sha"},
		{"tag with build_on_push", merge(rh, map[string]any{"source_revision_config.repo_ref": "refs/tags/v1", "source_config.build_on_push": true}), "body.source_config.build_on_push"},
		{"refs/heads ref", merge(rh, map[string]any{"source_revision_config.repo_ref": "refs/heads/main"}), "body.source_revision_config.repo_ref"},
		{"bad branch", merge(rh, map[string]any{"source_revision_config.repo_ref": "a..b"}), "body.source_revision_config.repo_ref"},
		{"config path escapes", merge(rh, map[string]any{"source_revision_config.graph_config_path": "../x.json"}), "body.source_revision_config.graph_config_path"},
		{"config path absolute", merge(rh, map[string]any{"source_revision_config.graph_config_path": "/x.json"}), "body.source_revision_config.graph_config_path"},
		{"config path not json", merge(rh, map[string]any{"source_revision_config.graph_config_path": "langgraph.yaml"}), "body.source_revision_config.graph_config_path"},
		{"empty install command", merge(rh, map[string]any{"source_config.install_command": ""}), "body.source_config.install_command"},
		// secrets
		{"secret name missing", merge(rh, map[string]any{"secrets": []any{map[string]any{"value": "v"}}}), "body.secrets.0.name"},
		{"secret value missing", merge(rh, map[string]any{"secrets": []any{map[string]any{"name": "A"}}}), "body.secrets.0.value"},
		{"secret bad name", merge(rh, map[string]any{"secrets": []any{map[string]any{"name": "1A", "value": "v"}}}), "body.secrets.0.name"},
		{"secret duplicate", merge(rh, map[string]any{"secrets": []any{map[string]any{"name": "A", "value": "v"}, map[string]any{"name": "A", "value": "w"}}}), "body.secrets.1.name"},
		{"secret redacted on create", merge(rh, map[string]any{"secrets": []any{map[string]any{"name": "A", "value": "********"}}}), "body.secrets.0.value"},
		{"secrets not a list", merge(rh, map[string]any{"secrets": map[string]any{}}), "body.secrets"},
		// external_container rules
		{"image_uri required", merge(img, map[string]any{"source_revision_config.image_uri": nil}), "body.source_revision_config.image_uri"},
		{"image_uri invalid", merge(img, map[string]any{"source_revision_config.image_uri": "Not A Ref"}), "body.source_revision_config.image_uri"},
		{"repo_url only repo_host", merge(img, map[string]any{"source_config.repo_url": "https://github.com/a/b"}), "body.source_config.repo_url"},
		{"build_on_push only repo_host", merge(img, map[string]any{"source_config.build_on_push": false}), "body.source_config.build_on_push"},
		{"deployment_type only repo_host", merge(img, map[string]any{"source_config.deployment_type": "dev"}), "body.source_config.deployment_type"},
		{"install_command only repo_host", merge(img, map[string]any{"source_config.install_command": "npm ci"}), "body.source_config.install_command"},
		{"repo_ref only repo_host", merge(img, map[string]any{"source_revision_config.repo_ref": "main"}), "body.source_revision_config.repo_ref"},
		{"graph_config_path only repo_host", merge(img, map[string]any{"source_revision_config.graph_config_path": "langgraph.json"}), "body.source_revision_config.graph_config_path"},
		{"custom_url not a url", merge(img, map[string]any{"source_config.custom_url": "ftp://x"}), "body.source_config.custom_url"},
		{"listener unknown", merge(img, map[string]any{"source_config.listener_id": "00000000-0000-4000-8000-000000000001"}), "body.source_config.listener_id"},
		{"listener_config without listener", merge(img, map[string]any{"source_config.listener_config": map[string]any{"k8s_namespace": "prod"}}), "body.source_config.listener_config"},
		{"namespace not a label", merge(img, map[string]any{"source_config.listener_id": "00000000-0000-4000-8000-000000000001", "source_config.listener_config": map[string]any{"k8s_namespace": "Prod_NS"}}), "body.source_config.listener_config.k8s_namespace"},
		// resource spec
		{"cpu below", spec(map[string]any{"cpu": 0.05}), "body.source_config.resource_spec.cpu"},
		{"cpu above", spec(map[string]any{"cpu": 8.5}), "body.source_config.resource_spec.cpu"},
		{"cpu_limit above", spec(map[string]any{"cpu_limit": 16.5}), "body.source_config.resource_spec.cpu_limit"},
		{"queue_cpu above", spec(map[string]any{"queue_cpu": 9}), "body.source_config.resource_spec.queue_cpu"},
		{"queue_cpu_limit below", spec(map[string]any{"queue_cpu_limit": 0}), "body.source_config.resource_spec.queue_cpu_limit"},
		{"cpu not a number", spec(map[string]any{"cpu": "1"}), "body.source_config.resource_spec.cpu"},
		{"memory not an integer", spec(map[string]any{"memory_mb": 1.5}), "body.source_config.resource_spec.memory_mb"},
		{"memory negative", spec(map[string]any{"memory_mb": -1}), "body.source_config.resource_spec.memory_mb"},
		{"limit below request", spec(map[string]any{"cpu": 2, "cpu_limit": 1}), "body.source_config.resource_spec.cpu_limit"},
		{"min above max", spec(map[string]any{"min_scale": 3, "max_scale": 2}), "body.source_config.resource_spec.min_scale"},
		{"bad label key", spec(map[string]any{"labels": map[string]any{"-bad": "x"}}), "body.source_config.resource_spec.labels.-bad"},
		{"bad label value", spec(map[string]any{"labels": map[string]any{"team": "a b"}}), "body.source_config.resource_spec.labels.team"},
		{"label value not string", spec(map[string]any{"labels": map[string]any{"team": 1}}), "body.source_config.resource_spec.labels"},
		{"service account", spec(map[string]any{"service_account_name": "Bad_Name"}), "body.source_config.resource_spec.service_account_name"},
		{"pull secret name", spec(map[string]any{"image_pull_secrets": []any{map[string]any{}}}), "body.source_config.resource_spec.image_pull_secrets.0.name"},
		{"volume name not dns", spec(map[string]any{"volumes": []any{map[string]any{"name": "Data"}}}), "body.source_config.resource_spec.volumes.0.name"},
		{"volume names unique", spec(map[string]any{"volumes": []any{map[string]any{"name": "data"}, map[string]any{"name": "data"}}}), "body.source_config.resource_spec.volumes.1.name"},
		{"volume source not object", spec(map[string]any{"volumes": []any{map[string]any{"name": "data", "emptyDir": "yes"}}}), "body.source_config.resource_spec.volumes.emptyDir"},
		{"mount names a volume", spec(map[string]any{"volumes": []any{map[string]any{"name": "data"}}, "volume_mounts": []any{map[string]any{"name": "other", "mountPath": "/d"}}}), "body.source_config.resource_spec.volume_mounts.0.name"},
		{"mount path required", spec(map[string]any{"volumes": []any{map[string]any{"name": "data"}}, "volume_mounts": []any{map[string]any{"name": "data"}}}), "body.source_config.resource_spec.volume_mounts.0.mountPath"},
		{"mount propagation enum", spec(map[string]any{"volumes": []any{map[string]any{"name": "data"}}, "volume_mounts": []any{map[string]any{"name": "data", "mountPath": "/d", "mountPropagation": "Sometimes"}}}), "body.source_config.resource_spec.volume_mounts.0.mountPropagation"},
		{"container name required", container(map[string]any{"name": nil}), "body.source_config.resource_spec.sidecars.0.name"},
		{"container name dns", container(map[string]any{"name": "Side_Car"}), "body.source_config.resource_spec.sidecars.0.name"},
		{"container image required", container(map[string]any{"image": nil}), "body.source_config.resource_spec.sidecars.0.image"},
		{"pull policy enum", container(map[string]any{"imagePullPolicy": "Sometimes"}), "body.source_config.resource_spec.sidecars.0.imagePullPolicy"},
		{"restart policy enum", container(map[string]any{"restartPolicy": "Never"}), "body.source_config.resource_spec.sidecars.0.restartPolicy"},
		{"env name C identifier", container(map[string]any{"env": []any{map[string]any{"name": "MY-VAR"}}}), "body.source_config.resource_spec.sidecars.0.env.0.name"},
		{"env value and valueFrom", container(map[string]any{"env": []any{map[string]any{"name": "A", "value": "x", "valueFrom": map[string]any{"secretKeyRef": map[string]any{}}}}}), "body.source_config.resource_spec.sidecars.0.env.0.valueFrom"},
		{"container mount names a volume", container(map[string]any{"volumeMounts": []any{map[string]any{"name": "nope", "mountPath": "/x"}}}), "body.source_config.resource_spec.sidecars.0.volumeMounts.0.name"},
		{"duplicate container names", spec(map[string]any{"init_containers": []any{map[string]any{"name": "a", "image": "busybox"}}, "sidecars": []any{map[string]any{"name": "a", "image": "busybox"}}}), "body.source_config.resource_spec.sidecars.0.name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hasLoc(t, e.call("POST", "/v2/deployments", c.body), c.loc)
		})
	}
	// Nothing was created by any of them.
	list := e.must(200, "GET", "/v2/deployments", nil)
	if n := len(list["resources"].([]any)); n != 0 {
		t.Fatalf("%d deployments created by invalid requests", n)
	}
}

func TestResourceSpecDefaultsAndRounding(t *testing.T) {
	e := start(t, "")
	body := merge(imageBody("sized"), map[string]any{"source_config.resource_spec": map[string]any{
		"min_scale": 1, "max_scale": 3, "cpu": 0.26, "memory_mb": 512, "db_cpu": 1, "db_memory_mb": 256,
		"redis_memory_mb": 128, "orchestrator_cpu": 3.33, "executor_memory_mb": 64,
		"labels": map[string]any{"team": "agents", "example.com/tier": "gold"}, "annotations": map[string]any{"note": "free text: ok"},
		"volumes": []any{map[string]any{"name": "cache", "emptyDir": map[string]any{}}}, "volume_mounts": []any{map[string]any{"name": "cache", "mountPath": "/cache"}},
		"init_containers": []any{map[string]any{"name": "migrate", "image": "ghcr.io/acme/migrate:1", "env": []any{map[string]any{"name": "MODE"}}}},
		"sidecars":        []any{map[string]any{"name": "proxy", "image": "envoyproxy/envoy:v1.30", "restartPolicy": "Always", "imagePullPolicy": "IfNotPresent", "resources": map[string]any{"limits": map[string]any{"cpu": "500m"}}}},
	}})
	d := e.must(201, "POST", "/v2/deployments", body)
	rs := d["source_config"].(map[string]any)["resource_spec"].(map[string]any)
	want := map[string]any{
		"cpu": 0.3, "cpu_limit": 0.6, "memory_mb": 512.0, "memory_limit_mb": 1024.0,
		"queue_min_scale": 1.0, "queue_max_scale": 3.0, "queue_cpu": 0.3, "queue_cpu_limit": 0.6,
		"queue_memory_mb": 512.0, "queue_memory_limit_mb": 1024.0, "db_cpu_limit": 2.0, "db_memory_limit_mb": 512.0,
		"redis_memory_limit_mb": 128.0, "orchestrator_cpu": 3.33, "executor_memory_mb": 64.0,
	}
	for k, v := range want {
		if rs[k] != v {
			t.Errorf("%s = %v, want %v", k, rs[k], v)
		}
	}
	env := rs["init_containers"].([]any)[0].(map[string]any)["env"].([]any)[0].(map[string]any)
	if env["value"] != "" {
		t.Errorf("EnvVar value default: %v", env["value"])
	}
	e.waitRevision(str(d, "id"), str(d, "latest_revision_id"), "DEPLOYED")

	// PATCH overwrites the spec and creates a revision.
	p := e.must(200, "PATCH", "/v2/deployments/"+str(d, "id"), map[string]any{"source_config": map[string]any{"resource_spec": map[string]any{"cpu": 8}}})
	rs = p["source_config"].(map[string]any)["resource_spec"].(map[string]any)
	if rs["cpu"] != 8.0 || rs["cpu_limit"] != 16.0 || rs["memory_mb"] != nil || str(p, "latest_revision_id") == str(d, "latest_revision_id") {
		t.Fatalf("patched spec %v", rs)
	}
}

func TestPatchValidation(t *testing.T) {
	e := start(t, "")
	repo := agentRepo(t)
	rh := e.must(201, "POST", "/v2/deployments", repoHostBody("rh", repo.Dir))
	img := e.must(201, "POST", "/v2/deployments", imageBody("img"))
	rhPath, imgPath := "/v2/deployments/"+str(rh, "id"), "/v2/deployments/"+str(img, "id")
	cases := []struct {
		name, path string
		body       any
		loc        string
	}{
		{"name immutable", rhPath, map[string]any{"name": "other"}, "body.name"},
		{"source immutable", rhPath, map[string]any{"source": "repo_host"}, "body.source"},
		{"repo_url immutable", rhPath, map[string]any{"source_config": map[string]any{"repo_url": repo.Dir}}, "body.source_config.repo_url"},
		{"integration immutable", rhPath, map[string]any{"source_config": map[string]any{"integration_id": str(rh, "source_config", "integration_id")}}, "body.source_config.integration_id"},
		{"deployment_type immutable", rhPath, map[string]any{"source_config": map[string]any{"deployment_type": "prod"}}, "body.source_config.deployment_type"},
		{"listener_id immutable", imgPath, map[string]any{"source_config": map[string]any{"listener_id": "00000000-0000-4000-8000-000000000001"}}, "body.source_config.listener_id"},
		{"listener_config immutable", imgPath, map[string]any{"source_config": map[string]any{"listener_config": map[string]any{"k8s_namespace": "a"}}}, "body.source_config.listener_config"},
		{"custom_url read-only on repo_host", rhPath, map[string]any{"source_config": map[string]any{"custom_url": "https://x.example"}}, "body.source_config.custom_url"},
		{"commit read-only", rhPath, map[string]any{"source_revision_config": map[string]any{"repo_commit_sha": "abc"}}, "body.source_revision_config.repo_commit_sha"},
		{"image_uri on repo_host", rhPath, map[string]any{"source_revision_config": map[string]any{"image_uri": "nginx"}}, "body.source_revision_config.image_uri"},
		{"repo_ref on image", imgPath, map[string]any{"source_revision_config": map[string]any{"repo_ref": "main"}}, "body.source_revision_config.repo_ref"},
		{"build_on_push on image", imgPath, map[string]any{"source_config": map[string]any{"build_on_push": true}}, "body.source_config.build_on_push"},
		{"resource_spec on repo_host", rhPath, map[string]any{"source_config": map[string]any{"resource_spec": map[string]any{}}}, "body.source_config.resource_spec"},
		{"bad cpu", imgPath, map[string]any{"source_config": map[string]any{"resource_spec": map[string]any{"cpu": 100}}}, "body.source_config.resource_spec.cpu"},
		{"tag with build_on_push", rhPath, map[string]any{"source_config": map[string]any{"build_on_push": true}, "source_revision_config": map[string]any{"repo_ref": "refs/tags/v1"}}, "body.source_config.build_on_push"},
		{"redacted secret with nothing stored", rhPath, map[string]any{"secrets": []any{map[string]any{"name": "NEW", "value": "********"}}}, "body.secrets.0.value"},
		{"read-only top field", rhPath, map[string]any{"status": "READY"}, "body.status"},
		{"bad image", imgPath, map[string]any{"source_revision_config": map[string]any{"image_uri": "nginx@sha256:abc"}}, "body.source_revision_config.image_uri"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hasLoc(t, e.call("PATCH", c.path, c.body), c.loc)
		})
	}
	// The tag rule also holds against the stored value: a tag ref first,
	// then build_on_push true is refused with loc on build_on_push.
	e.must(200, "PATCH", rhPath, map[string]any{"source_revision_config": map[string]any{"repo_ref": "refs/tags/v1"}})
	hasLoc(t, e.call("PATCH", rhPath, map[string]any{"source_config": map[string]any{"build_on_push": true}}), "body.source_config.build_on_push")
	// Nothing else changed: only that one PATCH made a revision.
	if n := len(e.revisions(str(rh, "id"))); n != 2 {
		t.Fatalf("%d revisions", n)
	}
	if n := len(e.revisions(str(img, "id"))); n != 1 {
		t.Fatalf("%d image revisions", n)
	}
}

func TestErrorsAndAuth(t *testing.T) {
	e := start(t, "")
	missing := "00000000-0000-4000-8000-00000000abcd"
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v2/deployments/" + missing, `{"detail":"Deployment ID ` + missing + ` not found."}`},
		{"PATCH", "/v2/deployments/" + missing, `{"detail":"Deployment ID ` + missing + ` not found."}`},
		{"DELETE", "/v2/deployments/" + missing, `{"detail":"Deployment ID ` + missing + ` not found."}`},
		{"GET", "/v2/deployments/" + missing + "/revisions", `{"detail":"Deployment ID ` + missing + ` not found."}`},
		{"GET", "/v2/deployments/" + missing + "/revisions/" + missing, `{"detail":"Deployment ID ` + missing + ` not found."}`},
		{"GET", "/v2/listeners/" + missing, `{"detail":"Listener ID ` + missing + ` not found."}`},
		{"PATCH", "/v2/listeners/" + missing, `{"detail":"Listener ID ` + missing + ` not found."}`},
		{"DELETE", "/v2/listeners/" + missing, `{"detail":"Listener ID ` + missing + ` not found."}`},
	} {
		body := any(nil)
		if c.method == "PATCH" {
			body = "{}"
		}
		r := e.call(c.method, c.path, body)
		if r.Code != 404 || r.Body != c.body {
			t.Errorf("%s %s: %d %s", c.method, c.path, r.Code, r.Body)
		}
	}
	d := e.must(201, "POST", "/v2/deployments", imageBody("x"))
	r := e.call("GET", "/v2/deployments/"+str(d, "id")+"/revisions/"+missing, nil)
	if r.Code != 404 || r.Body != `{"detail":"Revision ID `+missing+` not found."}` {
		t.Errorf("%d %s", r.Code, r.Body)
	}
	hasLoc(t, e.call("GET", "/v2/deployments/not-a-uuid", nil), "path.deployment_id")
	hasLoc(t, e.call("GET", "/v2/listeners/1234", nil), "path.listener_id")
	for _, q := range []string{"limit=0", "limit=101", "offset=-1", "limit=x", "status=BOGUS", "deployment_type=huge", "deployment_ids=nope"} {
		hasLoc(t, e.call("GET", "/v2/deployments?"+q, nil), "query."+strings.SplitN(q, "=", 2)[0])
	}
	hasLoc(t, e.call("GET", "/v2/deployments/"+str(d, "id")+"/revisions?status=NOPE", nil), "query.status")
	// Authentication: no key 401, bad key 401, other workspace 403.
	if r := e.call("GET", "/v2/deployments", nil, "X-Api-Key", ""); r.Code != 401 {
		t.Errorf("no key: %d", r.Code)
	}
	if r := e.call("GET", "/v2/deployments", nil, "X-Api-Key", "ap_wrong_key_000000000000000"); r.Code != 401 {
		t.Errorf("bad key: %d", r.Code)
	}
	if r := e.call("GET", "/v2/deployments", nil, "X-Tenant-Id", missing); r.Code != 403 {
		t.Errorf("foreign tenant: %d %s", r.Code, r.Body)
	}
	if r := e.call("GET", "/v2/deployments", nil, "X-Tenant-Id", e.ws); r.Code != 200 {
		t.Errorf("own tenant: %d %s", r.Code, r.Body)
	}
	// A duplicate name is a 409 and creates nothing.
	r = e.call("POST", "/v2/deployments", imageBody("x"))
	if r.Code != 409 || !strings.Contains(r.Body, "already exists") {
		t.Fatalf("duplicate: %d %s", r.Code, r.Body)
	}
}

// Reads need the Viewer role in the workspace, changes need Editor.
func TestRoles(t *testing.T) {
	e := start(t, "")
	d := e.must(201, "POST", "/v2/deployments", imageBody("roles"))
	k := e.must(201, "POST", "/api/v1/api-key", map[string]any{"description": "viewer", "workspaces": []any{map[string]any{"workspace_id": e.ws, "role": "Viewer"}}})
	viewer := str(k, "key")
	if r := e.call("GET", "/v2/deployments/"+str(d, "id"), nil, "X-Api-Key", viewer); r.Code != 200 {
		t.Fatalf("viewer read: %d %s", r.Code, r.Body)
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/v2/deployments"}, {"PATCH", "/v2/deployments/" + str(d, "id")}, {"DELETE", "/v2/deployments/" + str(d, "id")},
		{"POST", "/v2/deployments/" + str(d, "id") + "/revisions/" + str(d, "latest_revision_id") + "/redeploy"}, {"POST", "/v2/listeners"},
	} {
		if r := e.call(c.method, c.path, "{}", "X-Api-Key", viewer); r.Code != 403 {
			t.Errorf("viewer %s %s: %d %s", c.method, c.path, r.Code, r.Body)
		}
	}
}
