package a2aserve

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// One task's JSON does not change with the road it takes (docs/push-notifications.md):
// the stream, a push notification, tasks/get and a blocking
// message/send carry the same bytes for the same task state.
//
// They did not. a2a-go v2.3.1 deep-copies every task and artifact it
// keeps with encoding/gob (internal/utils DeepCopy: internal/taskupdate
// manager.go, a2asrv/taskstore inmemory.go), and so did TaskStore. Gob
// does not tell an empty slice from a nil one (golang/go#10905, working as
// intended), so an empty list in a data part or in metadata — the result's
// "findings": [] — came back as nil: null in tasks/get and in a blocking
// reply, [] in the stream and in a 1.0 push, which carry the event a2a-go
// was handed. A value gob cannot encode (a type nobody registered) failed
// the copy, and with it the task.
//
// The cure is at the only place every copy starts from, the values
// themselves: before a2a-go or the store sees an event or a task, every
// value under an `any` (data parts, metadata) is made one of encoding/json's
// own, which gob copies faithfully, with an empty list held as the JSON
// text "[]" (a json.RawMessage, which gob copies as bytes and encoding/json
// writes as it is). Values are replaced, never changed in place: the
// event's maps may be shared with its producer.

// emptyList is an empty JSON array that survives gob.
var emptyList = json.RawMessage("[]")

func init() {
	// Values under `any` are decoded by gob by their registered name.
	gob.Register(json.RawMessage(nil))
	gob.Register(json.Number(""))
}

// keepEmptyLists returns ev with every value under an `any` in the JSON
// data model and every empty list as emptyList; ev itself when nothing
// had to change.
func keepEmptyLists(ev a2a.Event) a2a.Event {
	switch v := ev.(type) {
	case *a2a.Task:
		if t, ok := taskValues(v); ok {
			return t
		}
	case *a2a.Message:
		if m, ok := messageValues(v); ok {
			return m
		}
	case *a2a.TaskStatusUpdateEvent:
		if v == nil {
			return ev
		}
		msg, changedMsg := messageValues(v.Status.Message)
		meta, changedMeta := objectValues(v.Metadata)
		if changedMsg || changedMeta {
			c := *v
			c.Status.Message, c.Metadata = msg, meta
			return &c
		}
	case *a2a.TaskArtifactUpdateEvent:
		if v == nil {
			return ev
		}
		art, changedArt := artifactValues(v.Artifact)
		meta, changedMeta := objectValues(v.Metadata)
		if changedArt || changedMeta {
			c := *v
			c.Artifact, c.Metadata = art, meta
			return &c
		}
	}
	return ev
}

// taskValues is keepEmptyLists for a task.
func taskValues(t *a2a.Task) (*a2a.Task, bool) {
	if t == nil {
		return t, false
	}
	msg, changed := messageValues(t.Status.Message)
	history, ch := eachValues(t.History, messageValues)
	changed = changed || ch
	artifacts, ch := eachValues(t.Artifacts, artifactValues)
	changed = changed || ch
	meta, ch := objectValues(t.Metadata)
	if !changed && !ch {
		return t, false
	}
	c := *t
	c.Status.Message, c.History, c.Artifacts, c.Metadata = msg, history, artifacts, meta
	return &c, true
}

func messageValues(m *a2a.Message) (*a2a.Message, bool) {
	if m == nil {
		return m, false
	}
	parts, changed := eachValues(m.Parts, partValues)
	meta, ch := objectValues(m.Metadata)
	if !changed && !ch {
		return m, false
	}
	c := *m
	c.Parts, c.Metadata = parts, meta
	return &c, true
}

func artifactValues(a *a2a.Artifact) (*a2a.Artifact, bool) {
	if a == nil {
		return a, false
	}
	parts, changed := eachValues(a.Parts, partValues)
	meta, ch := objectValues(a.Metadata)
	if !changed && !ch {
		return a, false
	}
	c := *a
	c.Parts, c.Metadata = parts, meta
	return &c, true
}

func partValues(p *a2a.Part) (*a2a.Part, bool) {
	if p == nil {
		return p, false
	}
	content, changed := p.Content, false
	if d, ok := p.Content.(a2a.Data); ok {
		var v any
		if v, changed = jsonValue(d.Value); changed {
			content = a2a.Data{Value: v}
		}
	}
	meta, ch := objectValues(p.Metadata)
	if !changed && !ch {
		return p, false
	}
	c := *p
	c.Content, c.Metadata = content, meta
	return &c, true
}

// eachValues applies f to every element, copying the slice only when one
// changed.
func eachValues[S ~[]*E, E any](s S, f func(*E) (*E, bool)) (S, bool) {
	var out S
	for i, e := range s {
		if ne, changed := f(e); changed {
			if out == nil {
				out = slices.Clone(s)
			}
			out[i] = ne
		}
	}
	if out == nil {
		return s, false
	}
	return out, true
}

func objectValues(m map[string]any) (map[string]any, bool) {
	v, changed := jsonValue(m)
	if !changed {
		return m, false
	}
	out, _ := v.(map[string]any)
	return out, true
}

// jsonValue returns v in encoding/json's data model (maps of string to
// any, []any, string, bool, numbers, nil), with every empty list as
// emptyList, and whether that is not v itself. Go numbers stay as they
// are (gob copies them, and they encode as before); any other type is
// taken through its JSON encoding. A value that does not encode is left
// for the copy to refuse.
func jsonValue(v any) (any, bool) {
	switch x := v.(type) {
	case nil, string, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number, json.RawMessage:
		return v, false
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			if ne, changed := jsonValue(e); changed {
				if out == nil {
					out = maps.Clone(x)
				}
				out[k] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		if x != nil && len(x) == 0 {
			return emptyList, true
		}
		var out []any
		for i, e := range x {
			if ne, changed := jsonValue(e); changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ne
			}
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && !rv.IsNil() && rv.Len() == 0 {
		return emptyList, true
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return v, false
	}
	generic, _ = jsonValue(generic)
	return generic, true
}
