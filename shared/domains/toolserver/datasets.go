package toolserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

var datasetFields = []string{
	"id", "name", "inputs_schema_definition", "outputs_schema_definition", "description", "data_type",
	"example_count", "session_count", "created_at", "modified_at", "last_session_start_time",
}

type listDatasetsIn struct {
	DatasetIDs          *string `json:"dataset_ids"`
	DataType            *string `json:"data_type"`
	DatasetName         *string `json:"dataset_name"`
	DatasetNameContains *string `json:"dataset_name_contains"`
	Metadata            *string `json:"metadata"`
	Limit               int     `json:"limit"`
}

func (s *Service) listDatasets(ctx context.Context, p *platform, in listDatasetsIn) (toolResult, error) {
	ids, err := list("dataset_ids", in.DatasetIDs)
	if err != nil {
		return nil, err
	}
	meta, err := jsonObject("metadata", in.Metadata)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, id := range ids {
		q.Add("id", id)
	}
	for key, v := range map[string]string{
		"data_type": str(in.DataType), "name": str(in.DatasetName),
		"name_contains": str(in.DatasetNameContains), "metadata": meta,
	} {
		if v != "" {
			q.Set(key, v)
		}
	}
	datasets, err := p.listArray(ctx, "/datasets", q, clampLimit(in.Limit, maxListLimit), 0)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(datasets))
	for _, d := range datasets {
		out = append(out, pick(d, datasetFields))
	}
	return map[string]any{"datasets": out, "total_count": len(out)}, nil
}

type readDatasetIn struct {
	DatasetID   *string `json:"dataset_id"`
	DatasetName *string `json:"dataset_name"`
}

func (s *Service) readDataset(ctx context.Context, p *platform, in readDatasetIn) (toolResult, error) {
	q := url.Values{}
	switch id, name := str(in.DatasetID), str(in.DatasetName); {
	case id != "":
		q.Set("id", id)
	case name != "":
		q.Set("name", name)
	default:
		return nil, errors.New("either dataset_id or dataset_name must be provided")
	}
	d, err := p.datasetBy(ctx, q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"dataset": pick(d, datasetFields)}, nil
}

type listExamplesIn struct {
	DatasetID          *string `json:"dataset_id"`
	DatasetName        *string `json:"dataset_name"`
	ExampleIDs         *string `json:"example_ids"`
	Filter             *string `json:"filter"`
	Metadata           *string `json:"metadata"`
	Splits             *string `json:"splits"`
	InlineS3URLs       *string `json:"inline_s3_urls"`
	IncludeAttachments *string `json:"include_attachments"`
	AsOf               *string `json:"as_of"`
	Limit              int     `json:"limit"`
	Offset             *string `json:"offset"`
}

func (s *Service) listExamples(ctx context.Context, p *platform, in listExamplesIn) (toolResult, error) {
	ids, err := list("example_ids", in.ExampleIDs)
	if err != nil {
		return nil, err
	}
	splits, err := list("splits", in.Splits)
	if err != nil {
		return nil, err
	}
	meta, err := jsonObject("metadata", in.Metadata)
	if err != nil {
		return nil, err
	}
	offset := 0
	if o := str(in.Offset); o != "" {
		if offset, err = strconv.Atoi(o); err != nil || offset < 0 {
			return nil, fmt.Errorf("offset must be a non-negative integer, not %q", o)
		}
	}
	q := url.Values{}
	switch dsID, dsName := str(in.DatasetID), str(in.DatasetName); {
	case len(ids) > 0:
		for _, id := range ids {
			q.Add("id", id)
		}
	case dsID != "":
		q.Set("dataset", dsID)
	case dsName != "":
		id, err := p.resolveDataset(ctx, dsName)
		if err != nil {
			return nil, err
		}
		q.Set("dataset", id)
	default:
		return nil, errors.New("one of example_ids, dataset_id or dataset_name must be provided")
	}
	for _, sp := range splits {
		q.Add("splits", sp)
	}
	for key, v := range map[string]string{"as_of": str(in.AsOf), "filter": str(in.Filter), "metadata": meta} {
		if v != "" {
			q.Set(key, v)
		}
	}
	inline := true
	if b := optBool(in.InlineS3URLs); b != nil {
		inline = *b
	}
	q.Set("inline_s3_urls", strconv.FormatBool(inline))
	if b := optBool(in.IncludeAttachments); b != nil && *b {
		q["select"] = []string{"attachment_urls", "outputs", "metadata"}
	}
	examples, err := p.listArray(ctx, "/examples", q, clampLimit(in.Limit, maxListLimit), offset)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(examples))
	for _, e := range examples {
		out = append(out, exampleOut(e))
	}
	return map[string]any{"examples": out, "total_count": len(out)}, nil
}

type readExampleIn struct {
	ExampleID string  `json:"example_id"`
	AsOf      *string `json:"as_of"`
}

func (s *Service) readExample(ctx context.Context, p *platform, in readExampleIn) (toolResult, error) {
	id := strings.TrimSpace(in.ExampleID)
	if id == "" {
		return nil, errors.New("example_id must be provided")
	}
	q := url.Values{}
	if a := str(in.AsOf); a != "" {
		q.Set("as_of", a)
	}
	var e map[string]any
	if err := p.get(ctx, "/examples/"+url.PathEscape(id), q, &e); err != nil {
		return nil, err
	}
	return map[string]any{"example": exampleOut(e)}, nil
}

// exampleOut is an example in the tools' ten fields. Attachments come from
// attachment_urls ({"attachment.<name>": {"presigned_url", "mime_type"}})
// keyed by name; runs are never expanded (always null).
func exampleOut(e map[string]any) map[string]any {
	out := pick(e, []string{"id", "dataset_id", "inputs", "outputs", "metadata", "created_at", "modified_at", "source_run_id"})
	out["runs"] = nil
	out["attachments"] = nil
	if urls, ok := e["attachment_urls"].(map[string]any); ok && len(urls) > 0 {
		att := make(map[string]any, len(urls))
		for k, u := range urls {
			v, _ := u.(map[string]any)
			att[strings.TrimPrefix(k, "attachment.")] = map[string]any{"presigned_url": v["presigned_url"], "mime_type": v["mime_type"]}
		}
		out["attachments"] = att
	}
	return out
}
