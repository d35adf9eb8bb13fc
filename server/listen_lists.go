package server

import (
	"encoding/json"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// listBits is a set of ListKinds, one bit each.
type listBits uint32

func (k ListKind) bit() listBits { return 1 << uint(k) }

// method is the notification announcing a change of the list; "" for an
// unknown kind.
func (k ListKind) method() string {
	switch k {
	case ListTools:
		return mcp.NotificationToolsListChanged
	case ListPrompts:
		return mcp.NotificationPromptsListChanged
	case ListResources:
		return mcp.NotificationResourcesListChanged
	}
	return ""
}

// listenFilter validates the filter of a listen before admission.
func (ep *Endpoint) listenFilter(p *rawParams) (*mcp.SubscriptionFilter, *protocolError) {
	var f mcp.SubscriptionFilter
	if len(p.Notifications) > 0 {
		if err := json.Unmarshal(p.Notifications, &f); err != nil {
			return nil, newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: malformed notifications filter"))
		}
	}
	if len(f.TaskIDs) > 0 {
		if !p.Meta.ClientCapabilities.HasExtension(mcp.ExtensionTasks) {
			return nil, missingCapabilities(tasksCapability)
		}
		seen := make(map[string]bool, len(f.TaskIDs))
		ids := f.TaskIDs[:0:0]
		for _, id := range f.TaskIDs {
			if task.ValidID(id) != nil {
				return nil, newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: malformed task ID in notifications.taskIds"))
			}
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if len(ids) > MaxListenTaskIDs {
			return nil, newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: too many task IDs in notifications.taskIds"))
		}
		f.TaskIDs = ids
	}
	if perr := resourceFilter(&f); perr != nil {
		return nil, perr
	}
	return &f, nil
}

// listFilter returns the list changes of f the endpoint can announce:
// those of the lists it serves.
func (ep *Endpoint) listFilter(f *mcp.SubscriptionFilter) listBits {
	var b listBits
	if f.ToolsListChanged && ep.servesTools() {
		b |= ListTools.bit()
	}
	if f.PromptsListChanged && ep.servesPrompts() {
		b |= ListPrompts.bit()
	}
	if f.ResourcesListChanged && ep.servesResources() {
		b |= ListResources.bit()
	}
	return b
}

// acknowledged is the filter a listen's acknowledgement names: the task
// IDs and list changes it honours.
func acknowledged(taskIDs []string, lists listBits) *mcp.SubscriptionFilter {
	return &mcp.SubscriptionFilter{
		TaskIDs:              taskIDs,
		ToolsListChanged:     lists&ListTools.bit() != 0,
		PromptsListChanged:   lists&ListPrompts.bit() != 0,
		ResourcesListChanged: lists&ListResources.bit() != 0,
	}
}

// watchLists makes the list changes of endpoint that s accepted reach it.
func (r *registry) watchLists(s *subscription, endpoint string) {
	if s.lists == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byList == nil {
		r.byList = map[string]map[*subscription]struct{}{}
	}
	set := r.byList[endpoint]
	if set == nil {
		set = map[*subscription]struct{}{}
		r.byList[endpoint] = set
	}
	set[s] = struct{}{}
	s.listEndpoint = endpoint
}

// unwatchListsLocked forgets s's list changes; r.mu is held.
func (r *registry) unwatchListsLocked(s *subscription) {
	if s.lists == 0 || s.listEndpoint == "" {
		return
	}
	if set := r.byList[s.listEndpoint]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(r.byList, s.listEndpoint)
		}
	}
}

// listChanged marks kind changed on every listen of endpoint that asked
// for it and wakes them. It never blocks on a client: changes coalesce
// until the listen writes them.
func (r *registry) listChanged(endpoint string, kind ListKind) {
	bit := kind.bit()
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.byList[endpoint] {
		if s.lists&bit != 0 {
			s.pendingLists.Or(uint32(bit))
			s.poke()
		}
	}
}

// flushLists writes the list changes pending for s, under s.pmu.
func (s *subscription) flushLists() drainResult {
	pending := listBits(s.pendingLists.Swap(0))
	if pending == 0 {
		return drainDone
	}
	params, err := json.Marshal(&mcp.ListChangedParams{Meta: mcp.Meta{mcp.MetaSubscriptionID: json.RawMessage(s.rpcID)}})
	if err != nil {
		return drainStreamFailed
	}
	for _, k := range []ListKind{ListTools, ListPrompts, ListResources} {
		if pending&k.bit() == 0 {
			continue
		}
		if s.c.stream.notify(k.method(), params) != nil {
			return drainStreamFailed
		}
	}
	return drainDone
}
