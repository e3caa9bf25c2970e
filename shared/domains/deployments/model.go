package deployments

import (
	"time"
)

// Source is where a deployment's code comes from.
type Source string

const (
	// SourceRepoHost deploys from a git repository (hosted offering).
	SourceRepoHost Source = "repo_host"
	// SourceExternalContainer deploys a container image (self-hosted).
	SourceExternalContainer Source = "external_container"
)

// Status is a deployment's status.
type Status string

const (
	StatusAwaitingDatabase Status = "AWAITING_DATABASE"
	StatusReady            Status = "READY"
	StatusUnused           Status = "UNUSED"
	StatusAwaitingDelete   Status = "AWAITING_DELETE"
	StatusUnknown          Status = "UNKNOWN"
)

var deploymentStatuses = []Status{StatusAwaitingDatabase, StatusReady, StatusUnused, StatusAwaitingDelete, StatusUnknown}

// RevisionStatus is a revision's status. The happy path is QUEUED →
// AWAITING_BUILD → BUILDING → AWAITING_DEPLOY → DEPLOYING → DEPLOYED.
type RevisionStatus string

const (
	RevCreating       RevisionStatus = "CREATING"
	RevQueued         RevisionStatus = "QUEUED"
	RevAwaitingBuild  RevisionStatus = "AWAITING_BUILD"
	RevBuilding       RevisionStatus = "BUILDING"
	RevAwaitingDeploy RevisionStatus = "AWAITING_DEPLOY"
	RevDeploying      RevisionStatus = "DEPLOYING"
	RevCreateFailed   RevisionStatus = "CREATE_FAILED"
	RevBuildFailed    RevisionStatus = "BUILD_FAILED"
	RevDeployFailed   RevisionStatus = "DEPLOY_FAILED"
	RevDeployed       RevisionStatus = "DEPLOYED"
	RevSkipped        RevisionStatus = "SKIPPED"
	RevInterrupted    RevisionStatus = "INTERRUPTED"
	RevUnknown        RevisionStatus = "UNKNOWN"
)

var revisionStatuses = []RevisionStatus{RevCreating, RevQueued, RevAwaitingBuild, RevBuilding,
	RevAwaitingDeploy, RevDeploying, RevCreateFailed, RevBuildFailed, RevDeployFailed, RevDeployed,
	RevSkipped, RevInterrupted, RevUnknown}

// Terminal reports whether a revision in status s will not change any more.
// UNKNOWN counts as terminal (the v1 rule): nothing in this service moves a
// revision out of it.
func (s RevisionStatus) Terminal() bool {
	switch s {
	case RevCreating, RevQueued, RevAwaitingBuild, RevBuilding, RevAwaitingDeploy, RevDeploying:
		return false
	}
	return true
}

// supersededStatus is what an unfinished revision becomes when a newer one
// is created: still waiting to build, it is SKIPPED; once building, it is
// INTERRUPTED.
func (s RevisionStatus) supersededStatus() RevisionStatus {
	switch s {
	case RevCreating, RevQueued, RevAwaitingBuild:
		return RevSkipped
	}
	return RevInterrupted
}

// SourceConfig is the deployment's source configuration. The same struct is
// the request shape (decoded strictly) and the response shape (every key
// present, null when unset).
type SourceConfig struct {
	IntegrationID  *string         `json:"integration_id"`
	RepoURL        *string         `json:"repo_url"`
	DeploymentType *string         `json:"deployment_type"`
	BuildOnPush    *bool           `json:"build_on_push"`
	CustomURL      *string         `json:"custom_url"`
	ResourceSpec   *ResourceSpec   `json:"resource_spec"`
	ListenerID     *string         `json:"listener_id"`
	ListenerConfig *ListenerConfig `json:"listener_config"`
	InstallCommand *string         `json:"install_command"`
	BuildCommand   *string         `json:"build_command"`
}

// SourceRevisionConfig is the revision-level configuration.
type SourceRevisionConfig struct {
	RepoRef         *string `json:"repo_ref"`
	GraphConfigPath *string `json:"graph_config_path"`
	ImageURI        *string `json:"image_uri"`
	RepoCommitSHA   *string `json:"repo_commit_sha"`
}

// ListenerConfig targets a listener's compute.
type ListenerConfig struct {
	K8sNamespace *string `json:"k8s_namespace"`
}

// ResourceSpec sizes an external_container deployment. Unset limits are
// filled with their defaults when the spec is accepted.
type ResourceSpec struct {
	MinScale           *int64            `json:"min_scale"`
	MaxScale           *int64            `json:"max_scale"`
	CPU                *float64          `json:"cpu"`
	CPULimit           *float64          `json:"cpu_limit"`
	MemoryMB           *int64            `json:"memory_mb"`
	MemoryLimitMB      *int64            `json:"memory_limit_mb"`
	QueueMinScale      *int64            `json:"queue_min_scale"`
	QueueMaxScale      *int64            `json:"queue_max_scale"`
	QueueCPU           *float64          `json:"queue_cpu"`
	QueueCPULimit      *float64          `json:"queue_cpu_limit"`
	QueueMemoryMB      *int64            `json:"queue_memory_mb"`
	QueueMemoryLimitMB *int64            `json:"queue_memory_limit_mb"`
	RedisCPU           *float64          `json:"redis_cpu"`
	RedisCPULimit      *float64          `json:"redis_cpu_limit"`
	RedisMemoryMB      *int64            `json:"redis_memory_mb"`
	RedisMemoryLimitMB *int64            `json:"redis_memory_limit_mb"`
	DBCPU              *float64          `json:"db_cpu"`
	DBCPULimit         *float64          `json:"db_cpu_limit"`
	DBMemoryMB         *int64            `json:"db_memory_mb"`
	DBMemoryLimitMB    *int64            `json:"db_memory_limit_mb"`
	DBStorageGi        *int64            `json:"db_storage_gi"`
	DBMaxConnections   *int64            `json:"db_max_connections"`
	Labels             map[string]string `json:"labels"`
	Annotations        map[string]string `json:"annotations"`
	ServiceAccountName *string           `json:"service_account_name"`
	ImagePullSecrets   []ObjectReference `json:"image_pull_secrets"`
	Volumes            []Volume          `json:"volumes"`
	VolumeMounts       []VolumeMount     `json:"volume_mounts"`
	InitContainers     []Container       `json:"init_containers"`
	Sidecars           []Container       `json:"sidecars"`
	reservedFields
}

// reservedFields are marked "not for use" by the interface: accepted by the
// schema and stored, never acted on.
type reservedFields struct {
	OrchestratorCPU           *float64 `json:"orchestrator_cpu"`
	OrchestratorCPULimit      *float64 `json:"orchestrator_cpu_limit"`
	OrchestratorMemoryMB      *int64   `json:"orchestrator_memory_mb"`
	OrchestratorMemoryLimitMB *int64   `json:"orchestrator_memory_limit_mb"`
	OrchestratorMinScale      *int64   `json:"orchestrator_min_scale"`
	OrchestratorMaxScale      *int64   `json:"orchestrator_max_scale"`
	ExecutorCPU               *float64 `json:"executor_cpu"`
	ExecutorCPULimit          *float64 `json:"executor_cpu_limit"`
	ExecutorMemoryMB          *int64   `json:"executor_memory_mb"`
	ExecutorMemoryLimitMB     *int64   `json:"executor_memory_limit_mb"`
}

// ObjectReference is a LocalObjectReference (an image-pull secret).
type ObjectReference struct {
	Name *string `json:"name"`
}

// FreeForm is a free-form JSON object (Kubernetes volume sources and the
// like), stored as given.
type FreeForm = map[string]any

// Volume is a pod volume.
type Volume struct {
	Name                  *string  `json:"name"`
	ConfigMap             FreeForm `json:"configMap"`
	Secret                FreeForm `json:"secret"`
	EmptyDir              FreeForm `json:"emptyDir"`
	PersistentVolumeClaim FreeForm `json:"persistentVolumeClaim"`
	NFS                   FreeForm `json:"nfs"`
	Projected             FreeForm `json:"projected"`
	DownwardAPI           FreeForm `json:"downwardAPI"`
	CSI                   FreeForm `json:"csi"`
}

// VolumeMount mounts a volume into a container.
type VolumeMount struct {
	Name             *string `json:"name"`
	MountPath        *string `json:"mountPath"`
	SubPath          *string `json:"subPath,omitempty"`
	MountPropagation *string `json:"mountPropagation,omitempty"`
	ReadOnly         *bool   `json:"readOnly,omitempty"`
	SubPathExpr      *string `json:"subPathExpr,omitempty"`
}

// Container is an init container or a sidecar.
type Container struct {
	Name            *string               `json:"name"`
	Image           *string               `json:"image"`
	ImagePullPolicy *string               `json:"imagePullPolicy,omitempty"`
	Command         []string              `json:"command,omitempty"`
	Args            []string              `json:"args,omitempty"`
	WorkingDir      *string               `json:"workingDir,omitempty"`
	Env             []EnvVar              `json:"env,omitempty"`
	EnvFrom         []FreeForm            `json:"envFrom,omitempty"`
	Resources       *ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount         `json:"volumeMounts,omitempty"`
	SecurityContext FreeForm              `json:"securityContext,omitempty"`
	RestartPolicy   *string               `json:"restartPolicy,omitempty"`
}

// EnvVar is a container environment variable.
type EnvVar struct {
	Name      *string  `json:"name"`
	Value     *string  `json:"value"`
	ValueFrom FreeForm `json:"valueFrom,omitempty"`
}

// ResourceRequirements are Kubernetes resource limits and requests.
type ResourceRequirements struct {
	Limits   map[string]string `json:"limits,omitempty"`
	Requests map[string]string `json:"requests,omitempty"`
}

// Secret is a secret as the API shows it: the value is always Redacted.
type Secret struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Redacted replaces every secret value in responses. Sending it back as a
// secret's value in a PATCH keeps the stored value of that secret.
const Redacted = "********"

// sealedSecret is a secret as stored: the value sealed by a secrets.Keeper.
type sealedSecret struct {
	Name   string `json:"name"`
	Sealed string `json:"sealed"`
}

// revisionConfig is what one revision is built and deployed from; the
// deployment keeps a copy of its latest revision's.
type revisionConfig struct {
	SourceRevisionConfig
	Secrets      []sealedSecret `json:"secrets"`
	ResourceSpec *ResourceSpec  `json:"resource_spec,omitempty"`
}

// deployment is the stored deployment record.
type deployment struct {
	ID          string    `json:"id"`
	WorkspaceID string    `json:"workspace_id"`
	Name        string    `json:"name"`
	Source      Source    `json:"source"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Status      Status    `json:"status"`
	// Config holds the deployment-level source configuration; its
	// ResourceSpec is unused (revision-level, kept in Current).
	Config       SourceConfig   `json:"config"`
	Current      revisionConfig `json:"current"`
	ImageVersion *string        `json:"image_version"`

	LatestRevisionID string   `json:"latest_revision_id,omitempty"`
	ActiveRevisionID string   `json:"active_revision_id,omitempty"`
	ActiveGraphs     []string `json:"active_graphs,omitempty"`
	// RevisionCount numbers revisions; each new revision takes the next
	// number in the same versioned write, so the order is total.
	RevisionCount int64 `json:"revision_count"`

	DeleteTracingProject bool       `json:"delete_tracing_project,omitempty"`
	DeleteRequestedAt    *time.Time `json:"delete_requested_at,omitempty"`
}

// revision is the stored revision record.
type revision struct {
	ID            string         `json:"id"`
	DeploymentID  string         `json:"deployment_id"`
	WorkspaceID   string         `json:"workspace_id"`
	Seq           int64          `json:"seq"`
	Source        Source         `json:"source"`
	Status        RevisionStatus `json:"status"`
	StatusMessage string         `json:"status_message,omitempty"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
	Config        revisionConfig `json:"config"`
	// Trigger says what created the revision: create, patch, push or
	// redeploy.
	Trigger string `json:"trigger"`
	// RedeployOf is the revision this one redeploys.
	RedeployOf string `json:"redeploy_of,omitempty"`
	// Graphs are the graph ids found by the build (repo_host).
	Graphs []string `json:"graphs,omitempty"`
	// ArtifactKey is the blob key of the build artifact (repo_host).
	ArtifactKey string `json:"artifact_key,omitempty"`
}

// Deployment is the API view of a deployment.
type Deployment struct {
	ID                   string               `json:"id"`
	TenantID             string               `json:"tenant_id"`
	Name                 string               `json:"name"`
	Source               Source               `json:"source"`
	SourceConfig         SourceConfig         `json:"source_config"`
	SourceRevisionConfig SourceRevisionConfig `json:"source_revision_config"`
	Secrets              []Secret             `json:"secrets"`
	CreatedAt            time.Time            `json:"created_at"`
	UpdatedAt            time.Time            `json:"updated_at"`
	Status               Status               `json:"status"`
	LatestRevisionID     *string              `json:"latest_revision_id"`
	ActiveRevisionID     *string              `json:"active_revision_id"`
	ImageVersion         *string              `json:"image_version"`
}

// Revision is the API view of a revision.
type Revision struct {
	ID                   string               `json:"id"`
	DeploymentID         string               `json:"deployment_id"`
	CreatedAt            time.Time            `json:"created_at"`
	UpdatedAt            time.Time            `json:"updated_at"`
	Status               RevisionStatus       `json:"status"`
	StatusMessage        *string              `json:"status_message"`
	Source               Source               `json:"source"`
	SourceRevisionConfig SourceRevisionConfig `json:"source_revision_config"`
	// Graphs lists the graph ids of the revision's graph configuration,
	// once its build has read it (null before, and for images).
	Graphs []string `json:"graphs"`
	// RedeployedFrom names the revision this one redeploys.
	RedeployedFrom *string `json:"redeployed_from"`
	// Trigger is create, patch, push or redeploy.
	Trigger string `json:"trigger"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (d *deployment) view(baseURL string) Deployment {
	sc := d.Config
	sc.ResourceSpec = d.Current.ResourceSpec
	if d.Source == SourceRepoHost {
		u := DeploymentURL(baseURL, d.ID)
		sc.CustomURL = &u
	}
	secrets := make([]Secret, 0, len(d.Current.Secrets))
	for _, s := range d.Current.Secrets {
		secrets = append(secrets, Secret{Name: s.Name, Value: Redacted})
	}
	return Deployment{
		ID: d.ID, TenantID: d.WorkspaceID, Name: d.Name, Source: d.Source,
		SourceConfig: sc, SourceRevisionConfig: d.Current.SourceRevisionConfig,
		Secrets: secrets, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Status: d.Status,
		LatestRevisionID: strPtr(d.LatestRevisionID), ActiveRevisionID: strPtr(d.ActiveRevisionID),
		ImageVersion: d.ImageVersion,
	}
}

func (r *revision) view() Revision {
	v := Revision{
		ID: r.ID, DeploymentID: r.DeploymentID, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		Status: r.Status, StatusMessage: strPtr(r.StatusMessage), Source: r.Source,
		SourceRevisionConfig: r.Config.SourceRevisionConfig, Graphs: r.Graphs,
		RedeployedFrom: strPtr(r.RedeployOf), Trigger: r.Trigger,
	}
	return v
}

// DeploymentURL is where a deployment's agent server (its thread API) is
// reached: {base}/deployments/{id}.
func DeploymentURL(baseURL, id string) string {
	return baseURL + "/deployments/" + id
}
