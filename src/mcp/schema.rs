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

fn context() -> Value {
    json!({
        "type": "string",
        "pattern": "^[A-Za-z0-9_.-]{1,64}$",
        "description": "Optional name of a separate memory database under the server's data directory (default \"default\"). Not \".\" or \"..\"."
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
        "embedding": {"type": "array", "items": {"type": "number"}, "description": "Only with echo_embedding."}
    });
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

fn results_of(item: Value) -> Value {
    object(json!({"results": {"type": "array", "items": item}}), &[])
}

/// The tools this server implements, in the order `tools/list` shows them.
pub fn tool_defs() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "create_memory",
            title: "Create a memory",
            description: "Create a new memory with optional type-specific metadata. `type` is one of episodic, semantic, procedural, strategic. Returns the stored memory (without the embedding unless echo_embedding is true); a new memory gets a UUID id unless `id` is given. `metadata.status` (e.g. \"superseded\") is the memory's status.",
            input: input(
                json!({
                    "type": {"type": "string", "enum": ["episodic", "semantic", "procedural", "strategic"], "description": "Type of memory to create"},
                    "content": {"type": "string", "description": "The main content/text of the memory"},
                    "embedding": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096, "description": "Vector embedding for the memory content (optional)"},
                    "importance": {"type": "number", "minimum": 0.0, "maximum": 1.0, "default": 0.0, "description": "Importance score (0.0 to 1.0)"},
                    "metadata": {"type": "object", "default": {}, "description": "Type-specific metadata (action_taken, context, confidence, status, etc.), at most 64 KB serialized"},
                    "id": id("Optional caller-chosen memory id; an existing id is an error."),
                    "title": {"type": "string", "maxLength": 4096, "description": "Optional short title."},
                    "echo_embedding": {"type": "boolean", "default": false, "description": "Return the embedding in the result."}
                }),
                &["type", "content"],
            ),
            output: memory_view(json!({})),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "get_memory",
            title: "Get a memory",
            description: "Read one memory by id: its type, title, content, importance, metadata, status, timestamps and the number of outgoing and incoming edges. Read-only.",
            input: input(
                json!({"memory_id": id("The memory to read.")}),
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
            description: "Ranked text search over memory titles, contents and AIM observations (case-insensitive word match; a word in the title counts double). With an `embedding`, its cosine similarity with memories' embeddings of the same dimension is added to the score, so it decides between equal text matches. Use it to find ids for get_memory, link, memory_path or expand. Read-only.",
            input: input(
                json!({
                    "query": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "Words to find."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "Max results (1-50). Default 10."},
                    "type": {"type": "string", "description": "Only memories of this type (memory type or AIM entityType)."},
                    "embedding": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 4096, "description": "Optional query embedding."}
                }),
                &["query"],
            ),
            output: object(
                json!({
                    "results": {"type": "array", "items": object(json!({
                        "id": {"type": "string"},
                        "title": nullable("string"),
                        "score": {"type": "number"},
                        "type": nullable("string")
                    }), &[])},
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
            description: "Delete a memory and every edge that touches it. Returns the number of edges removed.",
            input: input(
                json!({"memory_id": id("The memory to delete.")}),
                &["memory_id"],
            ),
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
            description: "Create a typed edge source -> target between two memories. Recommended edge types: caused_by (A was caused by B), contradicts (A conflicts with B), supersedes (A replaces B), related_to (general relation); any other name is accepted. Linking never changes a memory's status. An existing (source, type, target) edge is an error.",
            input: input(
                json!({
                    "source_id": id("Source memory ID"),
                    "target_id": id("Target memory ID"),
                    "edge_type": {"type": "string", "minLength": 1, "maxLength": 128, "description": "Relationship type: caused_by, contradicts, supersedes, related_to (recommended) or any other name."},
                    "metadata": {"type": "object", "description": "Optional metadata (max 4KB serialized JSON)"},
                    "weight": {"type": "number", "default": 1.0, "description": "Optional edge weight (default 1.0)."}
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
                    "created_at": {"type": "string"}
                }),
                &[],
            ),
            read_only: false,
            destructive: false,
            idempotent: false,
        },
        ToolDef {
            name: "unlink",
            title: "Remove an edge",
            description: "Remove an edge by its ID (the `id` returned by link, or an `edge_id` from related/traverse).",
            input: input(
                json!({"edge_id": id("The edge ID to remove")}),
                &["edge_id"],
            ),
            output: object(
                json!({"edge_id": {"type": "string"}, "removed": {"type": "boolean"}}),
                &[],
            ),
            read_only: false,
            destructive: true,
            idempotent: false,
        },
        ToolDef {
            name: "graph_stats",
            title: "Graph statistics",
            description: "Counts of memories and edges, the number of edges per edge type, the storage state (segments, log size, last checkpoint) and what recovery did when the database was opened. Read-only.",
            input: input(json!({}), &[]),
            output: object(
                json!({
                    "nodes": {"type": "integer", "minimum": 0},
                    "edges": {"type": "integer", "minimum": 0},
                    "edge_types": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
                    "storage": {"type": "object"},
                    "recovery": {"type": "object"}
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
    ]
}
