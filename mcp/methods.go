package mcp

// Request methods of the 2026-07-28 revision and of the Tasks extension.
const (
	MethodServerDiscover         = "server/discover"
	MethodToolsList              = "tools/list"
	MethodToolsCall              = "tools/call"
	MethodResourcesList          = "resources/list"
	MethodResourcesTemplatesList = "resources/templates/list"
	MethodResourcesRead          = "resources/read"
	MethodPromptsList            = "prompts/list"
	MethodPromptsGet             = "prompts/get"
	MethodCompletionComplete     = "completion/complete"
	MethodSubscriptionsListen    = "subscriptions/listen"

	// Input request methods. Servers never send these as JSON-RPC requests;
	// they appear only as the Method of an InputRequest (MRTR and tasks).
	MethodElicitationCreate     = "elicitation/create"
	MethodSamplingCreateMessage = "sampling/createMessage"
	MethodRootsList             = "roots/list"

	// Tasks extension (io.modelcontextprotocol/tasks).
	MethodTasksGet    = "tasks/get"
	MethodTasksUpdate = "tasks/update"
	MethodTasksCancel = "tasks/cancel"

	// MethodTasksList and MethodTasksResult existed in the experimental
	// tasks of revision 2025-11-25. The extension removed them: a server
	// implementing it answers both with -32601 (Method not found).
	MethodTasksList   = "tasks/list"
	MethodTasksResult = "tasks/result"
)

// Notification methods of the 2026-07-28 revision and of the Tasks
// extension.
const (
	// NotificationCancelled is sent by a stdio client to cancel a request,
	// and by a stdio server only to end a subscriptions/listen stream. It is
	// never used for tasks.
	NotificationCancelled = "notifications/cancelled"
	// NotificationProgress and NotificationMessage go only on the response
	// stream of the request they relate to, never on a listen stream.
	NotificationProgress = "notifications/progress"
	NotificationMessage  = "notifications/message"

	// List-change, resource-update and task notifications go only on a
	// subscriptions/listen stream whose filter asked for them.
	NotificationToolsListChanged          = "notifications/tools/list_changed"
	NotificationPromptsListChanged        = "notifications/prompts/list_changed"
	NotificationResourcesListChanged      = "notifications/resources/list_changed"
	NotificationResourcesUpdated          = "notifications/resources/updated"
	NotificationSubscriptionsAcknowledged = "notifications/subscriptions/acknowledged"
	NotificationTasks                     = "notifications/tasks"
)
