//! The tool list: names, titles, descriptions, input and output schemas, annotations.
//!
//! Written by hand (not derived) because the schemas are part of a contract with clients of
//! other servers: parameter names, defaults and result fields must stay exactly as the
//! original servers publish them, and descriptions carry the recommended vocabularies that
//! must not become schema enums.

use serde_json::{Value, json};

/// One tool as `tools/list` announces it.
#[derive(Clone, Debug)]
pub struct ToolDef {
    /// Tool name.
    pub name: &'static str,
    /// Human-readable title.
    pub title: &'static str,
    /// What the tool does, for the model.
    pub description: &'static str,
    /// JSON Schema of the arguments.
    pub input: Value,
    /// JSON Schema of `structuredContent`.
    pub output: Value,
    /// Does not modify the store.
    pub read_only: bool,
    /// May delete data.
    pub destructive: bool,
    /// Repeating the call with the same arguments has no further effect.
    pub idempotent: bool,
}

/// A tool set a server can serve, chosen at start (`--tools memory,server-memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// hopgraph's memory tools (the default): the seed tools of `docs/MCP-TOOLS.md` and
    /// their companions.
    Memory,
    /// The official MCP memory server's nine knowledge-graph tools, same names, parameters,
    /// results and messages (`docs/reference/server-memory.tools.md`).
    ServerMemory,
    /// mcp-knowledge-graph's (AIM) ten tools with contexts and locations
    /// (`docs/reference/mcp-knowledge-graph.tools.md`).
    Aim,
}

impl Profile {
    /// Every profile, with the name `--tools` takes.
    pub const ALL: [(&'static str, Profile); 3] = [
        ("memory", Profile::Memory),
        ("server-memory", Profile::ServerMemory),
        ("aim", Profile::Aim),
    ];

    /// The profile called `name`.
    pub fn parse(name: &str) -> Option<Profile> {
        Profile::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, p)| p)
    }
}

/// The tools of the `server-memory` profile.
pub const SERVER_MEMORY_TOOLS: [&str; 9] = [
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
];

/// The tools of the `aim` profile (the first two are also memory tools).
pub const AIM_TOOLS: [&str; 10] = [
    "aim_memory_store",
    "aim_memory_link",
    "aim_memory_add_facts",
    "aim_memory_forget",
    "aim_memory_remove_facts",
    "aim_memory_unlink",
    "aim_memory_read_all",
    "aim_memory_search",
    "aim_memory_get",
    "aim_memory_list_stores",
];

/// Whether tool `name` belongs to `profile`.
pub fn in_profile(name: &str, profile: Profile) -> bool {
    let aim_only =
        AIM_TOOLS.contains(&name) && !matches!(name, "aim_memory_store" | "aim_memory_link");
    match profile {
        Profile::ServerMemory => SERVER_MEMORY_TOOLS.contains(&name),
        Profile::Aim => AIM_TOOLS.contains(&name),
        Profile::Memory => !SERVER_MEMORY_TOOLS.contains(&name) && !aim_only,
    }
}

/// The tools of `profiles`, in the order `tools/list` shows them.
pub fn tool_defs_for(profiles: &[Profile]) -> Vec<ToolDef> {
    tool_defs()
        .into_iter()
        .filter(|d| profiles.iter().any(|&p| in_profile(d.name, p)))
        .collect()
}

/// JSON Schema pattern of a context name (the rule of
/// [`check_context_name`](hopgraph_memory::check_context_name), less the device names).
pub const CONTEXT_PATTERN: &str = "^[a-z0-9](?:[a-z0-9_-]|\\.[a-z0-9_-])*$";

fn context() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": 64,
        "pattern": CONTEXT_PATTERN,
        "description": "Separate database (default \"default\"); only create_memory and aim_memory_store create one."
    })
}

fn location() -> Value {
    json!({
        "type": "string",
        "enum": ["project", "global"],
        "description": "Optional storage location: \"project\" uses .hopgraph/ at the nearest project root (a parent holding .git, Cargo.toml, package.json, pyproject.toml or go.mod), \"global\" the server's data directory (the default). An explicitly configured data directory is always used."
    })
}

fn id(description: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 512, "description": description})
}

/// An RFC 3339 timestamp argument.
fn time(description: &str) -> Value {
    json!({"type": "string", "maxLength": 64, "description": description})
}

/// The `as_of` argument of the read tools.
fn as_of() -> Value {
    time("RFC 3339: see only what was valid then.")
}

/// `valid_from` and `valid_to` in a result: RFC 3339, `valid_to` null while valid.
fn validity() -> Value {
    json!({
        "valid_from": {"type": "string"},
        "valid_to": {"type": ["string", "null"], "description": "null: still valid."}
    })
}

/// Adds `extra`'s properties to the object schema of properties `props`.
fn with(mut props: Value, extra: Value) -> Value {
    if let (Some(m), Some(x)) = (props.as_object_mut(), extra.as_object()) {
        m.extend(x.clone());
    }
    props
}

fn stale() -> Value {
    json!({
        "type": ["object", "null"],
        "description": "Derived from a memory that stopped being valid (update_memory clears it).",
        "properties": {"since": {"type": "string"}, "because": {"type": "string"}, "hops": {"type": "integer", "minimum": 1}},
        "required": ["since", "because", "hops"]
    })
}

fn nullable(t: &str) -> Value {
    json!({"type": [t, "null"]})
}

/// Builds an object schema; every property is required unless listed in `optional`.
fn object(props: Value, optional: &[&str]) -> Value {
    let required: Vec<&String> = props
        .as_object()
        .map(|m| {
            m.keys()
                .filter(|k| !optional.contains(&k.as_str()))
                .collect()
        })
        .unwrap_or_default();
    json!({"type": "object", "properties": props, "required": required})
}

/// Builds an input schema: `required` lists the required parameters; `context` is added.
fn input(mut props: Value, required: &[&str]) -> Value {
    if let Some(m) = props.as_object_mut() {
        m.insert("context".into(), context());
    }
    json!({"type": "object", "properties": props, "required": required})
}

fn memory_view(extra: Value) -> Value {
    let mut props = json!({
        "id": {"type": "string", "description": "Memory id."},
        "type": {"type": ["string", "null"], "description": "Memory type (or AIM entityType)."},
        "title": nullable("string"),
        "content": {"type": "string"},
        "importance": {"type": "number"},
        "metadata": {"type": "object"},
        "status": {"type": ["string", "null"], "description": "metadata.status, e.g. \"superseded\"."},
        "created_at": {"type": "string", "description": "RFC 3339 timestamp."},
        "embedding": {"type": "array", "items": {"type": "number"}, "description": "Only with echo_embedding."},
        "stale": stale()
    });
    props = with(props, validity());
    if let (Some(m), Some(x)) = (props.as_object_mut(), extra.as_object()) {
        m.extend(x.clone());
    }
    object(props, &["embedding"])
}

fn entity() -> Value {
    object(
        json!({
            "name": {"type": "string", "minLength": 1, "maxLength": 512, "description": "Unique entity name."},
            "entityType": {"type": "string", "description": "Entity type, e.g. person, project."},
            "observations": {"type": "array", "items": {"type": "string"}, "description": "Facts about the entity."}
        }),
        &[],
    )
}

fn relation() -> Value {
    object(
        json!({
            "from": {"type": "string", "minLength": 1, "maxLength": 512, "description": "The name of the entity where the relation starts."},
            "to": {"type": "string", "minLength": 1, "maxLength": 512, "description": "The name of the entity where the relation ends."},
            "relationType": {"type": "string", "minLength": 1, "maxLength": 128, "description": "The type of the relation, an active-voice verb (manages, works_at, knows)."}
        }),
        &[],
    )
}

/// `{results: [...], truncated}`: the wrapped bare list of `related` and `traverse`.
fn list_of(item: Value) -> Value {
    object(
        json!({"results": {"type": "array", "items": item}, "truncated": {"type": "boolean"}}),
        &[],
    )
}

fn results_of(item: Value) -> Value {
    object(json!({"results": {"type": "array", "items": item}}), &[])
}

/// Every tool this server implements, in the order `tools/list` shows them (a server
/// lists those of its profiles: [`tool_defs_for`]).
pub fn tool_defs() -> Vec<ToolDef> {
    let mut defs = memory_tool_defs();
    defs.extend(server_memory_tool_defs());
    defs.extend(aim_tool_defs());
    defs
}

/// The server-memory entity: name, entityType, observations (the original's schema).
fn kg_entity() -> Value {
    object(
        json!({
            "name": {"type": "string", "description": "The name of the entity"},
            "entityType": {"type": "string", "description": "The type of the entity"},
            "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents associated with the entity"}
        }),
        &[],
    )
}

/// The server-memory relation: from, to, relationType (the original's schema).
fn kg_relation() -> Value {
    object(
        json!({
            "from": {"type": "string", "description": "The name of the entity where the relation starts"},
            "to": {"type": "string", "description": "The name of the entity where the relation ends"},
            "relationType": {"type": "string", "description": "The type of the relation"}
        }),
        &[],
    )
}

fn kg_graph() -> Value {
    let mut g = object(
        json!({
            "entities": {"type": "array", "items": kg_entity()},
            "relations": {"type": "array", "items": kg_relation()}
        }),
        &[],
    );
    g["properties"]["nextCursor"] = json!({"type": "string", "description": "read_graph: pass as `cursor` to read the next page; absent on the last page."});
    g
}

fn kg_outcome() -> Value {
    object(
        json!({"success": {"type": "boolean"}, "message": {"type": "string"}}),
        &[],
    )
}

/// A server-memory input schema: no `context` (the original has none; the server's
/// default context is used).
fn kg_input(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

/// The nine tools of the `server-memory` profile.
fn server_memory_tool_defs() -> Vec<ToolDef> {
    let kg = |name, title, description, input, output, ro, de, id| ToolDef {
        name,
        title,
        description,
        input,
        output,
        read_only: ro,
        destructive: de,
        idempotent: id,
    };
    vec![
        kg(
            "create_entities",
            "Create Entities",
            "Create multiple new entities in the knowledge graph. Names that already exist (and repeats within the call) are skipped; returns the entities created. Example: {\"entities\": [{\"name\": \"John_Smith\", \"entityType\": \"person\", \"observations\": [\"Speaks fluent Spanish\"]}]}",
            kg_input(
                json!({"entities": {"type": "array", "maxItems": 1000, "items": kg_entity()}}),
                &["entities"],
            ),
            object(
                json!({"entities": {"type": "array", "items": kg_entity()}}),
                &[],
            ),
            false,
            false,
            false,
        ),
        kg(
            "create_relations",
            "Create Relations",
            "Create multiple new relations between entities in the knowledge graph. Relations should be in active voice. Both entities must exist (else: Entity with name <name> not found, and nothing is written); relations already stored are skipped. Example: {\"relations\": [{\"from\": \"John_Smith\", \"to\": \"Anthropic\", \"relationType\": \"works_at\"}]}",
            kg_input(
                json!({"relations": {"type": "array", "maxItems": 1000, "items": kg_relation()}}),
                &["relations"],
            ),
            object(
                json!({"relations": {"type": "array", "items": kg_relation()}}),
                &[],
            ),
            false,
            false,
            false,
        ),
        kg(
            "add_observations",
            "Add Observations",
            "Add new observations to existing entities in the knowledge graph; observations an entity already has are skipped. Example: {\"observations\": [{\"entityName\": \"John_Smith\", \"contents\": [\"Prefers morning meetings\"]}]}",
            kg_input(
                json!({"observations": {"type": "array", "maxItems": 1000, "items": object(json!({
                "entityName": {"type": "string", "description": "The name of the entity to add the observations to"},
                "contents": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents to add"}
            }), &[])}}),
                &["observations"],
            ),
            object(
                json!({"results": {"type": "array", "items": object(json!({
                "entityName": {"type": "string"},
                "addedObservations": {"type": "array", "items": {"type": "string"}}
            }), &[])}}),
                &[],
            ),
            false,
            false,
            false,
        ),
        kg(
            "delete_entities",
            "Delete Entities",
            "Delete multiple entities and their associated relations from the knowledge graph. Example: {\"entityNames\": [\"John_Smith\"]}",
            kg_input(
                json!({"entityNames": {"type": "array", "maxItems": 1000, "items": {"type": "string"}, "description": "An array of entity names to delete"}}),
                &["entityNames"],
            ),
            kg_outcome(),
            false,
            true,
            true,
        ),
        kg(
            "delete_observations",
            "Delete Observations",
            "Delete specific observations from entities in the knowledge graph. Example: {\"deletions\": [{\"entityName\": \"John_Smith\", \"observations\": [\"Speaks fluent Spanish\"]}]}",
            kg_input(
                json!({"deletions": {"type": "array", "maxItems": 1000, "items": object(json!({
                "entityName": {"type": "string", "description": "The name of the entity containing the observations"},
                "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observations to delete"}
            }), &[])}}),
                &["deletions"],
            ),
            kg_outcome(),
            false,
            true,
            true,
        ),
        kg(
            "delete_relations",
            "Delete Relations",
            "Delete multiple relations from the knowledge graph. Example: {\"relations\": [{\"from\": \"John_Smith\", \"to\": \"Anthropic\", \"relationType\": \"works_at\"}]}",
            kg_input(
                json!({"relations": {"type": "array", "maxItems": 1000, "items": kg_relation(), "description": "An array of relations to delete"}}),
                &["relations"],
            ),
            kg_outcome(),
            false,
            true,
            true,
        ),
        kg(
            "read_graph",
            "Read Graph",
            "Read the entire knowledge graph. A large graph comes in pages of `limit` entities (default 1000) with the relations leaving them; pass the answer's `nextCursor` as `cursor` for the next page. Example: {} or {\"cursor\": \"n1000\", \"limit\": 500}",
            kg_input(
                json!({
                    "cursor": {"type": "string", "description": "Optional: the nextCursor of the previous page."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000, "description": "Optional: entities per page."}
                }),
                &[],
            ),
            kg_graph(),
            true,
            false,
            true,
        ),
        kg(
            "search_nodes",
            "Search Nodes",
            "Search for nodes in the knowledge graph based on a query: entities whose name, type or any observation contains the query (case-insensitive), with the relations touching them. Example: {\"query\": \"spanish\"}",
            kg_input(
                json!({"query": {"type": "string", "maxLength": 2048, "description": "The search query to match against entity names, types, and observation content"}}),
                &["query"],
            ),
            kg_graph(),
            true,
            false,
            true,
        ),
        kg(
            "open_nodes",
            "Open Nodes",
            "Open specific nodes in the knowledge graph by their names, with the relations touching them. Example: {\"names\": [\"John_Smith\"]}",
            kg_input(
                json!({"names": {"type": "array", "maxItems": 1000, "items": {"type": "string"}, "description": "An array of entity names to retrieve"}}),
                &["names"],
            ),
            kg_graph(),
            true,
            false,
            true,
        ),
    ]
}

/// AIM's input schema: `props` plus `context` and `location` (AIM's descriptions).
fn aim_input(props: Value, required: &[&str]) -> Value {
    let mut s = input(props, required);
    s["properties"]["location"] = location();
    s
}

fn aim_format() -> Value {
    json!({"type": "string", "enum": ["json", "pretty"], "default": "json", "description": "Output format of the text block: 'json' (default) for structured data, 'pretty' for human-readable text. structuredContent is the JSON either way."})
}

/// The AIM tools beyond `aim_memory_store` and `aim_memory_link` (which the memory profile
/// has too).
fn aim_tool_defs() -> Vec<ToolDef> {
    let t = |name, title, description, input, output, ro, de, id| ToolDef {
        name,
        title,
        description,
        input,
        output,
        read_only: ro,
        destructive: de,
        idempotent: id,
    };
    vec![
        t(
            "aim_memory_add_facts",
            "Add facts",
            "Add new facts to an existing memory. Use this to append information to something already stored.\n\nIMPORTANT: Memory must already exist - use aim_memory_store first. Fails with `Entity with name <name> not found` (nothing is written) if not found.\n\nRETURNS: Array of {entityName, addedObservations} showing what was added (duplicates are ignored).\n\nDATABASE: Adds to entities in the specified 'context' database, or the default database if not specified.\n\nEXAMPLES:\n- aim_memory_add_facts({observations: [{entityName: \"John\", contents: [\"Moved to Seattle\"]}]})",
            aim_input(
                json!({"observations": {"type": "array", "maxItems": 1000, "items": object(json!({
                "entityName": {"type": "string", "description": "The name of the entity to add the observations to"},
                "contents": {"type": "array", "items": {"type": "string"}, "description": "An array of observation contents to add"}
            }), &[])}}),
                &["observations"],
            ),
            results_of(object(
                json!({
                    "entityName": {"type": "string"},
                    "addedObservations": {"type": "array", "items": {"type": "string"}}
                }),
                &[],
            )),
            false,
            false,
            false,
        ),
        t(
            "aim_memory_forget",
            "Forget memories",
            "Forget memories. Removes memories and all their links (relations).\n\nRETURNS: the message \"Entities deleted successfully\".\n\nEXAMPLES:\n- aim_memory_forget({entityNames: [\"OldProject\"]})",
            aim_input(
                json!({"entityNames": {"type": "array", "maxItems": 1000, "items": {"type": "string"}, "description": "An array of entity names to delete"}}),
                &["entityNames"],
            ),
            kg_outcome(),
            false,
            true,
            true,
        ),
        t(
            "aim_memory_remove_facts",
            "Remove facts",
            "Remove specific facts from a memory. The memory itself remains.\n\nRETURNS: the message \"Observations deleted successfully\".\n\nEXAMPLES:\n- aim_memory_remove_facts({deletions: [{entityName: \"John\", observations: [\"Lives in Boston\"]}]})",
            aim_input(
                json!({"deletions": {"type": "array", "maxItems": 1000, "items": object(json!({
                "entityName": {"type": "string", "description": "The name of the entity containing the observations"},
                "observations": {"type": "array", "items": {"type": "string"}, "description": "An array of observations to delete"}
            }), &[])}}),
                &["deletions"],
            ),
            kg_outcome(),
            false,
            true,
            true,
        ),
        t(
            "aim_memory_unlink",
            "Unlink memories",
            "Remove links between memories. The memories themselves remain.\n\nRETURNS: the message \"Relations deleted successfully\".\n\nEXAMPLES:\n- aim_memory_unlink({relations: [{from: \"John\", to: \"OldCompany\", relationType: \"works_at\"}]})",
            aim_input(
                json!({"relations": {"type": "array", "maxItems": 1000, "items": relation(), "description": "An array of relations to delete"}}),
                &["relations"],
            ),
            kg_outcome(),
            false,
            true,
            true,
        ),
        t(
            "aim_memory_read_all",
            "Read all memories",
            "Read all memories in a database. Returns every stored memory and their links. A large database comes in pages of `limit` entities (default 1000) with the relations leaving them; pass `nextCursor` as `cursor` for the next page.\n\nFORMAT OPTIONS: \"json\" (default) or \"pretty\" (human-readable text).\n\nEXAMPLES:\n- aim_memory_read_all({})\n- aim_memory_read_all({context: \"work\", format: \"pretty\"})",
            aim_input(
                json!({
                    "format": aim_format(),
                    "cursor": {"type": "string", "description": "Optional: the nextCursor of the previous page."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000, "description": "Optional: entities per page."}
                }),
                &[],
            ),
            kg_graph(),
            true,
            false,
            true,
        ),
        t(
            "aim_memory_search",
            "Search memories",
            "Search memories by keyword. Matches the query (case-insensitive substring) against memory names, types and facts; returns the matching memories and the links between them.\n\nEXAMPLES:\n- aim_memory_search({query: \"John\"})\n- aim_memory_search({context: \"work\", query: \"Shane\", format: \"pretty\"})",
            aim_input(
                json!({
                    "query": {"type": "string", "maxLength": 2048, "description": "Search text to match against entity names, entity types, and observation content (case-insensitive)"},
                    "format": aim_format()
                }),
                &["query"],
            ),
            kg_graph(),
            true,
            false,
            true,
        ),
        t(
            "aim_memory_get",
            "Get memories",
            "Retrieve specific memories by exact name, with the links between them. Non-existent names are silently ignored.\n\nEXAMPLES:\n- aim_memory_get({names: [\"John\", \"TechConf2024\"]})\n- aim_memory_get({context: \"work\", names: [\"Q4_Project\"], format: \"pretty\"})",
            aim_input(
                json!({
                    "names": {"type": "array", "maxItems": 1000, "items": {"type": "string"}, "description": "An array of entity names to retrieve"},
                    "format": aim_format()
                }),
                &["names"],
            ),
            kg_graph(),
            true,
            false,
            true,
        ),
        t(
            "aim_memory_list_stores",
            "List stores",
            "List all available memory databases and show the current storage location. RETURNS: {project_databases: [...], global_databases: [...], current_location: \"...\"}: contexts under the project's .hopgraph directory and under the server's data directory. EXAMPLES:\n- aim_memory_list_stores()",
            json!({"type": "object", "properties": {}, "required": []}),
            object(
                json!({
                    "project_databases": {"type": "array", "items": {"type": "string"}},
                    "global_databases": {"type": "array", "items": {"type": "string"}},
                    "current_location": {"type": "string"}
                }),
                &[],
            ),
            true,
            false,
            true,
        ),
    ]
}

/// The tools of the `memory` profile.
fn memory_tool_defs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "create_memory",
            title: "Create a memory",
            description: "Store a memory; returns it, with a UUID id unless `id` is given. metadata.status is its status. Example: {\"type\": \"semantic\", \"title\": \"Prod DB\", \"content\": \"Prod runs Postgres 16\", \"importance\": 0.7}",
            input: input(
                json!({
                    "type": {"type": "string", "enum": ["episodic", "semantic", "procedural", "strategic"]},
                    "content": {"type": "string"},
                    "embedding": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096, "description": "Omit to let a server model embed title and content."},
                    "importance": {"type": "number", "minimum": 0.0, "maximum": 1.0, "default": 0.0},
                    "metadata": {"type": "object", "default": {}, "description": "Any keys (status, confidence, ...), at most 64 KB."},
                    "id": id("Caller-chosen id; an existing one is an error."),
                    "title": {"type": "string", "maxLength": 4096},
                    "echo_embedding": {"type": "boolean", "default": false},
                    "valid_from": time("RFC 3339; default now."),
                    "valid_to": time("RFC 3339; default never.")
                }),
                &["type", "content"],
            ),
            output: memory_view(json!({})),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "update_memory",
            title: "Update a memory",
            description: "Change the fields given (metadata replaces the whole object); id, created_at and edges stay; a stale flag is cleared. Re-indexed, and re-embedded by a server model when title or content change. Returns the memory. Example: {\"memory_id\": \"m-17\", \"content\": \"Deploy failed: config change\", \"importance\": 0.8}",
            input: input(
                json!({
                    "memory_id": id("Memory id."),
                    "content": {"type": "string"},
                    "type": {"type": "string", "enum": ["episodic", "semantic", "procedural", "strategic"]},
                    "importance": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                    "metadata": {"type": "object", "description": "At most 64 KB."},
                    "title": {"type": "string", "maxLength": 4096},
                    "embedding": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096},
                    "echo_embedding": {"type": "boolean", "default": false},
                    "valid_from": time("RFC 3339."),
                    "valid_to": time("RFC 3339.")
                }),
                &["memory_id"],
            ),
            output: memory_view(json!({})),
            read_only: false,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "supersede_memory",
            title: "Supersede a memory",
            description: "Replace a current memory, in one commit: the new memory (by_id, or type, content, ... as in create_memory) valid from `at`, an edge new -supersedes-> old with metadata.reason, the old one valid until `at` with status superseded. Memories derived from the old one (X -derived_from-> old, up to 5 hops, current only) are flagged stale and listed. Example: {\"memory_id\": \"addr-1\", \"content\": \"Alice lives in Paris\", \"type\": \"semantic\", \"reason\": \"moved\"}",
            input: input(
                json!({
                    "memory_id": id("The memory being replaced."),
                    "by_id": id("An existing memory that replaces it."),
                    "type": {"type": "string", "enum": ["episodic", "semantic", "procedural", "strategic"]},
                    "content": {"type": "string"},
                    "title": {"type": "string", "maxLength": 4096},
                    "id": id("Id of the new memory."),
                    "importance": {"type": "number", "minimum": 0.0, "maximum": 1.0},
                    "metadata": {"type": "object"},
                    "embedding": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096},
                    "at": time("RFC 3339; default now."),
                    "reason": {"type": "string", "maxLength": 2048},
                    "derived_edge_types": {"type": "array", "items": {"type": "string"}, "maxItems": 100, "default": ["derived_from", "depends_on", "based_on"]}
                }),
                &["memory_id"],
            ),
            output: {
                let get = memory_view(json!({
                    "updated_at": {"type": "string"},
                    "edges": object(json!({"outgoing": {"type": "integer", "minimum": 0}, "incoming": {"type": "integer", "minimum": 0}}), &[])
                }));
                object(
                    json!({
                        "old": get.clone(),
                        "new": get,
                        "edge_id": {"type": "string"},
                        "stale": {"type": "array", "maxItems": 100, "items": object(json!({
                            "id": {"type": "string"},
                            "title": nullable("string"),
                            "hops": {"type": "integer", "minimum": 1}
                        }), &[])},
                        "truncated": {"type": "boolean"}
                    }),
                    &[],
                )
            },
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "memory_history",
            title: "Supersession history of a memory",
            description: "The chain of memories linked by supersedes edges through this one, oldest first, with each one's validity and the reason it replaced its predecessor. Read-only.",
            input: input(json!({"memory_id": id("Memory id.")}), &["memory_id"]),
            output: object(
                json!({
                    "history": {"type": "array", "maxItems": 100, "items": object(with(json!({
                        "id": {"type": "string"},
                        "title": nullable("string"),
                        "reason": nullable("string")
                    }), validity()), &[])},
                    "truncated": {"type": "boolean"}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "get_memory",
            title: "Get a memory",
            description: "One memory by id, with its counts of outgoing and incoming edges. Read-only.",
            input: input(
                json!({"memory_id": id("Memory id."), "as_of": as_of()}),
                &["memory_id"],
            ),
            output: memory_view(json!({
                "updated_at": {"type": "string", "description": "RFC 3339 timestamp."},
                "edges": object(json!({"outgoing": {"type": "integer", "minimum": 0}, "incoming": {"type": "integer", "minimum": 0}}), &[])
            })),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "memory_search",
            title: "Search memories",
            description: "Find memories by words (BM25 over title, content and observations; any word may match, all words, the phrase or a title match rank higher; \"Deploys\" finds \"deploy\") and/or by `embedding` (cosine). With both, the two rankings are fused and neighbours of the best hits can join. Each hit names the best-matching `field` with a `snippet`. `near` keeps memories within `max_hops` of those ids and ranks closer ones higher (score x (1 + 2^-hops)); hits then carry `hops`. Scores: text 0-1 (best 1), cosine, or fused. Only current memories unless `as_of` or include_history. Read-only.\n\nEXAMPLES:\n- memory_search({query: \"deploy rollback\"})\n- memory_search({query: \"why did the cache fail\", near: [\"incident-42\"], max_hops: 2, edge_types: [\"caused_by\"]})",
            input: input(
                json!({
                    "query": {"type": "string", "maxLength": 4096, "description": "Required unless `embedding` is given."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                    "offset": {"type": "integer", "minimum": 0, "maximum": 1000, "default": 0},
                    "type": {"type": "string", "description": "Memory type or AIM entityType."},
                    "min_importance": {"type": "number"},
                    "created_after": {"type": "string", "description": "RFC 3339, inclusive."},
                    "created_before": {"type": "string", "description": "RFC 3339, exclusive."},
                    "embedding": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096, "description": "Omit to let a server model embed `query`."},
                    "near": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 100, "description": "Memory ids; edges walked both ways."},
                    "max_hops": {"type": "integer", "minimum": 1, "maximum": 6, "default": 2, "description": "With `near`."},
                    "edge_types": {"type": "array", "items": {"type": "string"}, "description": "With `near`; default any."},
                    "as_of": as_of(),
                    "include_history": {"type": "boolean", "default": false, "description": "Also memories not valid now; hits carry `current`."},
                    "recency_half_life_days": {"type": "number", "exclusiveMinimum": 0, "description": "Score x 2^(-age/half-life), age since valid_from."},
                    "importance_weight": {"type": "number", "minimum": 0, "maximum": 1, "description": "Score x (1 - w + w x importance)."}
                }),
                &[],
            ),
            output: object(
                json!({
                    "results": {"type": "array", "items": object(json!({
                        "id": {"type": "string"},
                        "title": nullable("string"),
                        "score": {"type": "number"},
                        "type": nullable("string"),
                        "field": {"type": ["string", "null"], "enum": ["title", "content", "observations", null], "description": "The field that matched best; null for an embedding-only hit."},
                        "snippet": {"type": ["string", "null"], "maxLength": 200, "description": "Up to 200 characters of that field around the first match."},
                        "hops": {"type": "integer", "minimum": 0, "description": "With `near` only: hops from the nearest `near` memory (0: one of them)."},
                        "current": {"type": "boolean", "description": "With include_history only: valid now."},
                        "stale": stale(),
                        "valid_from": {"type": "string"},
                        "valid_to": {"type": ["string", "null"]}
                    }), &["hops", "current"])},
                    "truncated": {"type": "boolean"}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "delete_memory",
            title: "Delete a memory",
            description: "Delete a memory and every edge touching it.",
            input: input(json!({"memory_id": id("Memory id.")}), &["memory_id"]),
            output: object(
                json!({
                    "id": {"type": "string"},
                    "deleted": {"type": "boolean"},
                    "edges_removed": {"type": "integer", "minimum": 0}
                }),
                &[],
            ),
            read_only: false,
            destructive: true,
            idempotent: false,
        },
        ToolDef {
            name: "link",
            title: "Link two memories",
            description: "Add a typed edge source -> target. Suggested types: caused_by (source was caused by target), contradicts, supersedes (source replaces target), related_to; any name works. Never changes a status; a duplicate (source, type, target) is an error. Example: {\"source_id\": \"outage\", \"edge_type\": \"caused_by\", \"target_id\": \"deploy-42\"}",
            input: input(
                json!({
                    "source_id": id("Memory id."),
                    "target_id": id("Memory id."),
                    "edge_type": {"type": "string", "minLength": 1, "maxLength": 128},
                    "metadata": {"type": "object", "description": "At most 4 KB."},
                    "weight": {"type": "number", "default": 1.0},
                    "valid_from": time("RFC 3339; default now."),
                    "valid_to": time("RFC 3339; default never.")
                }),
                &["source_id", "target_id", "edge_type"],
            ),
            output: object(
                json!({
                    "id": {"type": "string", "description": "Edge id (pass it to unlink)."},
                    "source_memory_id": {"type": "string"},
                    "target_memory_id": {"type": "string"},
                    "edge_type": {"type": "string"},
                    "metadata": {"type": "object"},
                    "weight": {"type": "number"},
                    "created_at": {"type": "string"},
                    "valid_from": {"type": "string"},
                    "valid_to": {"type": ["string", "null"]}
                }),
                &[],
            ),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "end_link",
            title: "End an edge",
            description: "Stop an edge being valid at `at`; it stays for history and as_of reads (unlink deletes). An edge already ended is an error.",
            input: input(
                json!({"edge_id": id("Edge id."), "at": time("RFC 3339; default now.")}),
                &["edge_id"],
            ),
            output: object(
                json!({"edge_id": {"type": "string"}, "valid_to": {"type": "string"}}),
                &[],
            ),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "unlink",
            title: "Remove an edge",
            description: "Delete an edge by id (from link, related or traverse).",
            input: input(json!({"edge_id": id("Edge id.")}), &["edge_id"]),
            output: object(
                json!({"edge_id": {"type": "string"}, "removed": {"type": "boolean"}}),
                &[],
            ),
            read_only: false,
            destructive: true,
            idempotent: false,
        },
        ToolDef {
            name: "related",
            title: "Direct neighbors of a memory",
            description: "Direct neighbours of a memory, one entry per edge: edge id and type, outgoing/incoming as seen from memory_id, a summary of the other end. `limit` applies after the type filter. Read-only.",
            input: input(
                json!({
                    "memory_id": id("Memory id."),
                    "edge_type": {"type": "string", "minLength": 1, "maxLength": 128},
                    "direction": {"type": "string", "enum": ["outgoing", "incoming", "both"], "default": "both"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                    "as_of": as_of()
                }),
                &["memory_id"],
            ),
            output: list_of(object(
                with(
                    json!({
                        "memory_id": {"type": "string"},
                        "edge_id": {"type": "string"},
                        "edge_type": {"type": "string"},
                        "direction": {"type": "string", "enum": ["outgoing", "incoming"]},
                        "summary": {"type": "string"}
                    }),
                    validity(),
                ),
                &[],
            )),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "traverse",
            title: "Walk the graph from a memory",
            description: "Breadth-first walk from memory_id (edges undirected unless `direction`): every memory reached, start excluded, with its depth and path (edge ids, types, directions); `limit` keeps the first. Finds causal chains and clusters. Read-only.",
            input: input(
                json!({
                    "memory_id": id("Start memory id."),
                    "edge_types": {"type": "array", "items": {"type": "string"}, "maxItems": 1000, "description": "Default all."},
                    "max_depth": {"type": "integer", "minimum": 1, "maximum": 5, "default": 3},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                    "direction": {"type": "string", "enum": ["outgoing", "incoming", "both"], "default": "both"},
                    "as_of": as_of()
                }),
                &["memory_id"],
            ),
            output: list_of(object(
                json!({
                    "memory_id": {"type": "string"},
                    "depth": {"type": "integer", "minimum": 1},
                    "path": {"type": "array", "items": object(with(json!({
                        "edge_id": {"type": "string"},
                        "edge_type": {"type": "string"},
                        "direction": {"type": "string", "enum": ["outgoing", "incoming"]}
                    }), validity()), &[])},
                    "summary": {"type": "string"}
                }),
                &[],
            )),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "memory_path",
            title: "Shortest path between two memories",
            description: "Shortest path between two memories: the chain of ids with each edge's type, direction and id, or found:false with a message. Edges undirected unless direction is out (forward from from_id) or in. Traces causes, supersessions, dependencies. Read-only. Example: {\"from_id\": \"outage\", \"to_id\": \"deploy-42\", \"edge_types\": [\"caused_by\"]}",
            input: input(
                json!({
                    "from_id": id("Memory id."),
                    "to_id": id("Memory id."),
                    "max_hops": {"type": "integer", "minimum": 1, "maximum": 10, "default": 4},
                    "edge_types": {"type": "array", "items": {"type": "string"}, "maxItems": 1000, "description": "Default all."},
                    "direction": {"type": "string", "enum": ["both", "out", "in"], "default": "both"},
                    "all_shortest": {"type": "boolean", "default": false, "description": "Every shortest path in `paths` (at most 16)."},
                    "as_of": as_of()
                }),
                &["from_id", "to_id"],
            ),
            output: {
                let entry = object(
                    json!({
                        "id": {"type": "string", "description": "Memory id of this node along the path."},
                        "title": {"type": ["string", "null"], "description": "Memory title."},
                        "edge_type_to_next": {"type": "string", "description": "The edge type linking this node to the next one in the path. Absent on the final node."},
                        "direction_to_next": {"type": "string", "enum": ["forward", "backward"], "description": "forward when the edge runs from this node to the next."},
                        "edge_id": {"type": "string", "description": "The id of that edge."},
                        "valid_from": {"type": "string", "description": "That edge's validity."},
                        "valid_to": {"type": ["string", "null"]}
                    }),
                    &[
                        "edge_type_to_next",
                        "direction_to_next",
                        "edge_id",
                        "valid_from",
                        "valid_to",
                    ],
                );
                object(
                    json!({
                        "found": {"type": "boolean"},
                        "hops": {"type": "integer", "minimum": 0},
                        "path": {"type": "array", "items": entry.clone()},
                        "message": {"type": "string", "description": "Why found is false."},
                        "paths": {"type": "array", "maxItems": 16, "items": {"type": "array", "items": entry}},
                        "truncated": {"type": "boolean"},
                        "limit_reached": {"type": "boolean"}
                    }),
                    &["message", "paths", "truncated", "limit_reached"],
                )
            },
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "expand",
            title: "Typed-edge neighborhood of seed memories",
            description: "Typed-edge neighbourhood of seed memories: one document per node reached, with via {seed_doc_id, hop, edge_type, direction} (include_route: every hop). both = a forward plus a backward sweep; any = mixed-direction routes. filter_properties (equality on metadata keys, type, title, importance) and include_superseded filter results, not the walk. Fewest hops wins, then seed, edge_type, forward. Seeds are not results; unknown ones go to warnings. Read-only.",
            input: input(
                json!({
                    "seed_doc_ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 1000},
                    "hops": {"type": "integer", "minimum": 1, "maximum": 5},
                    "direction": {"type": "string", "enum": ["both", "forward", "backward", "outgoing", "incoming", "any"], "default": "both", "description": "outgoing/incoming = forward/backward."},
                    "edge_types": {"type": "array", "items": {"type": "string"}, "maxItems": 1000, "description": "Default all."},
                    "filter_properties": {"type": "object", "description": "e.g. {\"type\": \"semantic\"}"},
                    "include_superseded": {"type": "boolean", "default": false, "description": "false drops memories with status superseded or not valid now."},
                    "include_route": {"type": "boolean", "default": false},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                    "as_of": as_of()
                }),
                &["seed_doc_ids", "hops"],
            ),
            output: {
                let hop = object(
                    json!({
                        "node": {"type": "string"},
                        "edge_id": {"type": "string"},
                        "edge_type": {"type": "string"},
                        "direction": {"type": "string", "enum": ["forward", "backward"]}
                    }),
                    &[],
                );
                let via = object(
                    json!({
                        "seed_doc_id": {"type": "string"},
                        "hop": {"type": "integer", "minimum": 1},
                        "edge_type": {"type": "string"},
                        "direction": {"type": "string", "enum": ["forward", "backward"]},
                        "route": {"type": "array", "items": hop}
                    }),
                    &["route"],
                );
                object(
                    json!({
                        "documents": {"type": "array", "items": object(json!({
                            "doc_id": {"type": "string"},
                            "title": {"type": ["string", "null"]},
                            "properties": {"type": "object"},
                            "mtime": {"type": "string", "description": "Last change, RFC 3339."},
                            "hash": {"type": "string", "description": "Content hash."},
                            "via": via
                        }), &[])},
                        "warnings": {"type": "array", "items": object(json!({
                            "seed_doc_id": {"type": "string"},
                            "reason": {"type": "string"}
                        }), &[])},
                        "truncated": {"type": "boolean"},
                        "limit_reached": {"type": "boolean"}
                    }),
                    &["limit_reached"],
                )
            },
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "graph_stats",
            title: "Graph statistics",
            description: "Counts of memories and edges, edges per type, storage and recovery state, search mode (text, or hybrid with the server's model). Read-only.",
            input: input(json!({}), &[]),
            output: object(
                json!({
                    "nodes": {"type": "integer", "minimum": 0},
                    "edges": {"type": "integer", "minimum": 0},
                    "edge_types": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
                    "storage": {"type": "object"},
                    "recovery": {"type": "object"},
                    "search_mode": {"type": "string", "enum": ["text", "hybrid"], "description": "hybrid: the server embeds text with its model (embed_model) and memory_search fuses text and vector ranking; text: no model loaded, text ranking (plus any embedding a caller passes)"},
                    "embed_model": {
                        "type": ["object", "null"],
                        "properties": {
                            "id": {"type": "string"},
                            "dimension": {"type": "integer", "minimum": 1},
                            "precision": {"type": "string", "description": "how the model's dense layers run: f32-avx2, f32-neon or f32-portable (f32 products: AVX2 + FMA, aarch64, other CPUs), bf16-avx512 (bf16 products on a CPU with AVX-512 BF16, the default there), or bf16-emulated (HOPGRAPH_EMBED_PRECISION)"}
                        },
                        "required": ["id", "dimension"]
                    }
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "aim_memory_store",
            title: "Store entities",
            description: "Store new entities in the knowledge graph. Each entity has a unique name, an entityType and a list of observations. Returns the entities newly created; names that already exist (and repeats within the call) are skipped. Entities are created in the given `context` database (default \"default\").",
            input: {
                let mut s = input(
                    json!({
                        "entities": {"type": "array", "maxItems": 1000, "items": entity()},
                        "location": location()
                    }),
                    &["entities"],
                );
                s["properties"]["context"]["description"] = json!(
                    "Optional memory context. Entities will be created in the specified context's knowledge graph."
                );
                s
            },
            output: results_of(entity()),
            read_only: false,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "aim_memory_link",
            title: "Link entities",
            description: "Link two memories together with a relationship. Use this to connect related information.\n\nRELATION STRUCTURE: Each link has 'from' (subject), 'relationType' (verb), and 'to' (object).\n- Use active voice verbs: \"manages\", \"works_at\", \"knows\", \"attended\", \"created\"\n- Read as: \"from relationType to\" (e.g., \"Alice manages Q4_Project\")\n- Avoid passive: use \"manages\" not \"is_managed_by\"\n\nIMPORTANT: Both 'from' and 'to' entities must already exist in the same database; if any is missing, nothing is written and the error names the missing entities.\n\nRETURNS: Array of created relations (duplicates are ignored).\n\nDATABASE: Relations are created in the specified 'context' database, or the default database if not specified.",
            input: {
                let mut s = input(
                    json!({
                        "relations": {"type": "array", "maxItems": 1000, "items": relation()},
                        "location": location()
                    }),
                    &["relations"],
                );
                s["properties"]["context"]["description"] = json!(
                    "Optional memory context. Relations will be created in the specified context's knowledge graph."
                );
                s
            },
            output: results_of(relation()),
            read_only: false,
            destructive: false,
            idempotent: true,
        },
        ToolDef {
            name: "list_contexts",
            title: "List contexts",
            description: "List the contexts (separate memory databases) in the server's data directory, by name, with whether this server has each open, and the default context. Contexts under location \"project\" are not listed. Read-only; creates nothing.",
            input: json!({"type": "object", "properties": {}, "required": []}),
            output: object(
                json!({
                    "contexts": {"type": "array", "items": object(json!({
                        "name": {"type": "string"},
                        "open": {"type": "boolean", "description": "Whether this server has the database open now."}
                    }), &[])},
                    "default_context": {"type": "string"}
                }),
                &[],
            ),
            read_only: true,
            destructive: false,
            idempotent: true,
        },
    ]
}
