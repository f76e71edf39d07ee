//! Writes `crates/berth-proto/src/schema_table.rs`, berth's table of the Kubernetes protobuf
//! messages, from the k8s-pb crate's prost bindings: for each message of the served
//! packages its fields (JSON name, tag, wire type), and the (apiVersion, kind) → message
//! lookups.
//!
//! It also writes `tests/generated/openapi_types.rs`, the list of messages that have a
//! k8s-openapi type (matched by package and case-insensitive name), which the test
//! `json_names_match_k8s_openapi` compares field by field.
//!
//! Which fields Go's JSON leaves out when they are zero (a non-pointer scalar with
//! `omitempty`: `generateName`, `nodeName`, `hostNetwork`, but not the pointer
//! `tolerationSeconds`) is not in the protos; it comes from the Kubernetes Go types, read
//! once into `go-omitempty-fields.txt` beside this crate's manifest by
//! `generate-schema -- --go-fields api=DIR apimachinery=DIR metrics=DIR` (checkouts of
//! k8s.io/api, k8s.io/apimachinery and k8s.io/metrics at the Kubernetes version of k8s-pb).
//!
//! `cargo run -p berth-proto-gen --bin generate-schema` rewrites the files; `-- --check` only
//! compares (the test `generated_schema_is_up_to_date` runs that). The crates' sources are
//! found with `cargo metadata`, so the versions in Cargo.lock are the ones read.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use syn::punctuated::Punctuated;
use syn::{Expr, Fields, GenericArgument, Item, Lit, Meta, PathArguments, Token, Type};

/// The Kubernetes version of k8s-openapi's types berth compiles against (the workspace's
/// `k8s-openapi` feature).
const K8S_OPENAPI_VERSION: &str = "v1_37";

/// k8s-openapi types that are not plain serde structs: WatchEvent is a generic enum, Patch
/// has no Deserialize.
const OPENAPI_NOT_STRUCTS: &[&str] = &[
    "k8s.io.apimachinery.pkg.apis.meta.v1.Patch",
    "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent",
];

/// The packages berth serves, by their directory under k8s-pb's `src/`, with the API group
/// of the API packages (apimachinery's packages have none: their kinds are meta kinds).
const PACKAGES: &[(&str, Option<&str>)] = &[
    ("api/apps/v1", Some("apps")),
    ("api/authentication/v1", Some("authentication.k8s.io")),
    ("api/authorization/v1", Some("authorization.k8s.io")),
    ("api/autoscaling/v1", Some("autoscaling")),
    ("api/autoscaling/v2", Some("autoscaling")),
    ("api/batch/v1", Some("batch")),
    ("api/coordination/v1", Some("coordination.k8s.io")),
    ("api/core/v1", Some("")),
    ("api/discovery/v1", Some("discovery.k8s.io")),
    ("api/events/v1", Some("events.k8s.io")),
    ("api/networking/v1", Some("networking.k8s.io")),
    ("api/node/v1", Some("node.k8s.io")),
    ("api/policy/v1", Some("policy")),
    ("api/rbac/v1", Some("rbac.authorization.k8s.io")),
    ("api/resource/v1", Some("resource.k8s.io")),
    ("api/scheduling/v1", Some("scheduling.k8s.io")),
    ("api/storage/v1", Some("storage.k8s.io")),
    ("apimachinery/pkg/api/resource", None),
    ("apimachinery/pkg/apis/meta/v1", None),
    ("apimachinery/pkg/runtime", None),
    ("apimachinery/pkg/util/intstr", None),
    ("metrics/pkg/apis/metrics/v1beta1", Some("metrics.k8s.io")),
];

/// Kinds that k8s-pb does not mark as resources (no `impl Resource`): subresource bodies
/// and the metrics API's kinds, by package and prost type name, with their kind.
const EXTRA_KINDS: &[(&str, &str, &str)] = &[
    ("api/autoscaling/v1", "Scale", "Scale"),
    ("api/authentication/v1", "TokenRequest", "TokenRequest"),
    ("api/policy/v1", "Eviction", "Eviction"),
    (
        "metrics/pkg/apis/metrics/v1beta1",
        "NodeMetrics",
        "NodeMetrics",
    ),
    (
        "metrics/pkg/apis/metrics/v1beta1",
        "PodMetrics",
        "PodMetrics",
    ),
];

/// apimachinery's meta kinds, which every group version serves (their k8s-pb type names
/// are the kinds). Table is not one: it has no protobuf form, clients ask for it as JSON.
const META_KINDS: &[&str] = &[
    "APIGroup",
    "APIGroupList",
    "APIResourceList",
    "APIVersions",
    "CreateOptions",
    "DeleteOptions",
    "GetOptions",
    "ListOptions",
    "PartialObjectMetadata",
    "PartialObjectMetadataList",
    "PatchOptions",
    "Status",
    "UpdateOptions",
    "WatchEvent",
];

/// Messages with hand-written JSON in apimachinery, and how berth maps them.
const SPECIAL: &[(&str, &str)] = &[
    ("k8s.io.apimachinery.pkg.api.resource.Quantity", "Quantity"),
    (
        "k8s.io.apimachinery.pkg.api.resource.QuantityValue",
        "Quantity",
    ),
    ("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", "Duration"),
    (
        "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1",
        "EmbeddedJson",
    ),
    (
        "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime",
        "MicroTime",
    ),
    ("k8s.io.apimachinery.pkg.apis.meta.v1.Time", "Time"),
    (
        "k8s.io.apimachinery.pkg.runtime.RawExtension",
        "EmbeddedJson",
    ),
    (
        "k8s.io.apimachinery.pkg.util.intstr.IntOrString",
        "IntOrString",
    ),
];

/// Messages with hand-written JSON that no served field uses, so berth has no mapping for
/// them: a field of one of these types is an error here, not a silently wrong JSON shape.
const UNMAPPED_SPECIAL: &[&str] = &[
    "k8s.io.apimachinery.pkg.apis.meta.v1.Fields",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Timestamp",
    "k8s.io.apimachinery.pkg.runtime.Unknown",
];

struct Field {
    /// prost's snake_case name until JSON names are assigned, then the JSON name.
    json: String,
    /// Go embeds the field's struct (`json:",inline"`): its fields are the parent's in JSON.
    inline: bool,
    /// Go's JSON leaves the field out when it is zero (a non-pointer scalar, `omitempty`).
    omits_zero: bool,
    tag: u32,
    repeated: bool,
    ty: FieldTy,
}

enum FieldTy {
    Scalar(&'static str),
    Message(String),
    MapString,
    MapBytes,
    MapMessage(String),
}

struct Message {
    fields: Vec<Field>,
}

#[derive(Default)]
struct Schema {
    /// By full protobuf name.
    messages: BTreeMap<String, Message>,
    /// (apiVersion, kind) → message full name.
    kinds: BTreeMap<(String, String), String>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().is_some_and(|arg| arg == "--go-fields") {
        write_go_fields(&args[1..])
    } else {
        run(args.iter().any(|arg| arg == "--check"))
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("generate-schema: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(check: bool) -> Result<(), String> {
    let crates = locate_crates()?;
    let (k8s_pb_src, version) = crates.get("k8s-pb").ok_or("k8s-pb is not a dependency")?;
    let (openapi_src, _) = crates
        .get("k8s-openapi")
        .ok_or("k8s-openapi is not a dependency")?;
    let mut schema = read_schema(k8s_pb_src)?;
    let properties = openapi_properties(&schema, openapi_src)?;
    assign_json_names(&mut schema, &properties)?;
    mark_go_omitted_zeros(&mut schema)?;
    let outputs = [
        ("src/schema_table.rs", render(&schema, version)?),
        (
            "tests/generated/openapi_types.rs",
            render_openapi_types(&schema, openapi_src),
        ),
    ];
    for (path, text) in outputs {
        let out = berth_proto_dir().join(path);
        if check {
            let current = std::fs::read_to_string(&out)
                .map_err(|error| format!("reading {}: {error}", out.display()))?;
            if current != text {
                return Err(format!(
                    "{} is out of date: run `cargo run -p berth-proto-gen --bin generate-schema`",
                    out.display()
                ));
            }
        } else {
            std::fs::write(&out, text)
                .map_err(|error| format!("writing {}: {error}", out.display()))?;
        }
    }
    Ok(())
}

/// The berth-proto crate, whose files this writes.
fn berth_proto_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../berth-proto")
}

/// The `src` directory and version of each package of this crate's dependency graph, as
/// `cargo metadata` resolves them.
fn locate_crates() -> Result<BTreeMap<String, (PathBuf, String)>, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = berth_proto_dir().join("Cargo.toml");
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .map_err(|error| format!("running cargo metadata: {error}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|error| format!("parsing cargo metadata: {error}"))?;
    let packages = metadata["packages"]
        .as_array()
        .ok_or("no packages in metadata")?;
    let mut crates = BTreeMap::new();
    for package in packages {
        let (Some(name), Some(manifest), Some(version)) = (
            package["name"].as_str(),
            package["manifest_path"].as_str(),
            package["version"].as_str(),
        ) else {
            continue;
        };
        if let Some(dir) = Path::new(manifest).parent() {
            crates.insert(name.to_owned(), (dir.join("src"), version.to_owned()));
        }
    }
    Ok(crates)
}

/// The test list of (message, k8s-openapi type) pairs.
fn render_openapi_types(schema: &Schema, openapi_src: &Path) -> String {
    let mut out = String::from(
        "// @generated by `cargo run -p berth-proto-gen --bin generate-schema`: the messages that have a\n\
         // k8s-openapi type, for the JSON name test. Do not edit.\n\n\
         use super::{FieldsOf, fields_of};\n\n\
         pub(crate) static TYPES: &[(&str, FieldsOf)] = &[\n",
    );
    for (name, module, openapi_name) in openapi_types(schema, openapi_src) {
        let _ = writeln!(
            out,
            "    ({name:?}, fields_of::<k8s_openapi::{module}::{openapi_name}>),"
        );
    }
    out.push_str("];\n");
    out
}

fn read_schema(src: &Path) -> Result<Schema, String> {
    let mut schema = Schema::default();
    // Resource kinds by message full name, to name the lists after their items.
    let mut resource_kinds: BTreeMap<String, (String, String)> = BTreeMap::new();
    for &(dir, group) in PACKAGES {
        let path = src.join(dir).join("mod.rs");
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("reading {}: {error}", path.display()))?;
        let file = syn::parse_file(&text)
            .map_err(|error| format!("parsing {}: {error}", path.display()))?;
        let module: Vec<&str> = dir.split('/').collect();
        let package = format!("k8s.io.{}", module.join("."));
        for item in &file.items {
            match item {
                Item::Struct(item) if derives_prost_message(&item.attrs) => {
                    let name = format!("{package}.{}", item.ident);
                    let message = read_message(&module, &item.fields)
                        .map_err(|error| format!("{name}: {error}"))?;
                    schema.messages.insert(name, message);
                }
                Item::Impl(item) if implements_resource(item) => {
                    let Type::Path(self_ty) = &*item.self_ty else {
                        continue;
                    };
                    let Some(ident) = self_ty.path.segments.last() else {
                        continue;
                    };
                    let constants = impl_string_constants(item);
                    let (Some(api_version), Some(kind)) =
                        (constants.get("API_VERSION"), constants.get("KIND"))
                    else {
                        return Err(format!(
                            "{package}.{}: Resource without a kind",
                            ident.ident
                        ));
                    };
                    if group.is_some() {
                        resource_kinds.insert(
                            format!("{package}.{}", ident.ident),
                            (api_version.clone(), kind.clone()),
                        );
                    }
                }
                _ => {}
            }
        }
        if let Some(group) = group {
            let version = module.last().copied().unwrap_or_default();
            let api_version = if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            };
            for &(extra_dir, type_name, kind) in EXTRA_KINDS {
                if extra_dir == dir {
                    resource_kinds.insert(
                        format!("{package}.{type_name}"),
                        (api_version.clone(), kind.to_owned()),
                    );
                }
            }
        }
    }
    for (name, (api_version, kind)) in &resource_kinds {
        if !schema.messages.contains_key(name) {
            return Err(format!("kind {kind}: no message {name}"));
        }
        schema
            .kinds
            .insert((api_version.clone(), kind.clone()), name.clone());
        let list = format!("{name}List");
        if schema.messages.contains_key(&list) {
            schema
                .kinds
                .insert((api_version.clone(), format!("{kind}List")), list);
        }
    }
    check_references(&schema)?;
    Ok(schema)
}

fn derives_prost_message(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("derive")
            && attr
                .parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
                .is_ok_and(|paths| {
                    paths.iter().any(|path| {
                        path.segments.len() == 2
                            && path.segments[0].ident == "prost"
                            && path.segments[1].ident == "Message"
                    })
                })
    })
}

fn implements_resource(item: &syn::ItemImpl) -> bool {
    item.trait_.as_ref().is_some_and(|(_, path, _)| {
        path.segments.len() == 2
            && path.segments[0].ident == "crate"
            && path.segments[1].ident == "Resource"
    })
}

fn impl_string_constants(item: &syn::ItemImpl) -> BTreeMap<String, String> {
    let mut constants = BTreeMap::new();
    for impl_item in &item.items {
        if let syn::ImplItem::Const(constant) = impl_item
            && let Expr::Lit(expr) = &constant.expr
            && let Lit::Str(value) = &expr.lit
        {
            constants.insert(constant.ident.to_string(), value.value());
        }
    }
    constants
}

fn read_message(module: &[&str], fields: &Fields) -> Result<Message, String> {
    let mut out = Vec::new();
    for field in fields {
        let Some(ident) = &field.ident else { continue };
        let rust_name = ident.to_string();
        let rust_name = rust_name.trim_start_matches("r#");
        let Some(attr) = field
            .attrs
            .iter()
            .find(|attr| attr.path().is_ident("prost"))
        else {
            continue;
        };
        let args = attr
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .map_err(|error| format!("field {rust_name}: {error}"))?;
        let mut words = Vec::new();
        let mut values = BTreeMap::new();
        for arg in &args {
            match arg {
                Meta::Path(path) => words.push(path_text(path)),
                Meta::NameValue(pair) => {
                    if let Expr::Lit(expr) = &pair.value
                        && let Lit::Str(value) = &expr.lit
                    {
                        values.insert(path_text(&pair.path), value.value());
                    }
                }
                Meta::List(list) => {
                    return Err(format!(
                        "field {rust_name}: unexpected {}(..)",
                        path_text(&list.path)
                    ));
                }
            }
        }
        let tag: u32 = values
            .get("tag")
            .and_then(|tag| tag.parse().ok())
            .ok_or_else(|| format!("field {rust_name}: no tag"))?;
        let repeated = words.iter().any(|word| word == "repeated");
        let ty = if let Some(map) = values.get("btree_map").or(values.get("map")) {
            match map.as_str() {
                "string, string" => FieldTy::MapString,
                "string, bytes" => FieldTy::MapBytes,
                "string, message" => FieldTy::MapMessage(message_type(module, &field.ty, true)?),
                other => return Err(format!("field {rust_name}: map<{other}> unsupported")),
            }
        } else if values.contains_key("bytes") || words.iter().any(|word| word == "bytes") {
            FieldTy::Scalar("Bytes")
        } else if words.iter().any(|word| word == "message") {
            FieldTy::Message(message_type(module, &field.ty, false)?)
        } else {
            let scalar = words
                .iter()
                .find_map(|word| match word.as_str() {
                    "bool" => Some("Bool"),
                    "int32" => Some("Int32"),
                    "int64" => Some("Int64"),
                    "double" => Some("Double"),
                    "string" => Some("String"),
                    _ => None,
                })
                .ok_or_else(|| format!("field {rust_name}: unsupported type {words:?}"))?;
            FieldTy::Scalar(scalar)
        };
        out.push(Field {
            json: rust_name.to_owned(),
            inline: false,
            omits_zero: false,
            tag,
            repeated,
            ty,
        });
    }
    out.sort_by_key(|field| field.tag);
    Ok(Message { fields: out })
}

fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// The full protobuf name of the message a field holds: the innermost type of
/// `Option<..>` / `Vec<..>` / `Box<..>` (or a map's value), its `super::` path resolved
/// against the module it is written in.
fn message_type(module: &[&str], ty: &Type, map_value: bool) -> Result<String, String> {
    let Type::Path(path) = ty else {
        return Err("field type is not a path".to_owned());
    };
    let Some(last) = path.path.segments.last() else {
        return Err("empty type".to_owned());
    };
    let wrapper = last.ident.to_string();
    if matches!(
        wrapper.as_str(),
        "Option" | "Vec" | "Box" | "BTreeMap" | "HashMap"
    ) {
        let PathArguments::AngleBracketed(args) = &last.arguments else {
            return Err(format!("{wrapper} without arguments"));
        };
        let types: Vec<&Type> = args
            .args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            })
            .collect();
        let inner = if map_value && types.len() == 2 {
            types[1]
        } else {
            types[0]
        };
        return message_type(module, inner, map_value);
    }
    let mut resolved: Vec<String> = module.iter().map(|segment| (*segment).to_owned()).collect();
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|segment| segment.ident.to_string())
        .collect();
    let (type_name, modules) = segments.split_last().ok_or("empty type path")?;
    for segment in modules {
        if segment == "super" {
            resolved.pop();
        } else {
            resolved.push(segment.clone());
        }
    }
    Ok(format!("k8s.io.{}.{type_name}", resolved.join(".")))
}

/// The committed list of fields Go's JSON leaves out when zero (see the crate doc).
fn go_fields_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("go-omitempty-fields.txt")
}

/// Marks the fields of `go-omitempty-fields.txt` (lines `message tag`).
fn mark_go_omitted_zeros(schema: &mut Schema) -> Result<(), String> {
    let path = go_fields_file();
    let text = std::fs::read_to_string(&path)
        .map_err(|error| format!("reading {}: {error}", path.display()))?;
    for line in text
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
    {
        let (name, tag) = line
            .split_once(' ')
            .ok_or_else(|| format!("{}: bad line {line:?}", path.display()))?;
        let tag: u32 = tag
            .parse()
            .map_err(|_| format!("{}: bad tag in {line:?}", path.display()))?;
        let field = schema
            .messages
            .get_mut(name)
            .and_then(|message| message.fields.iter_mut().find(|field| field.tag == tag))
            .ok_or_else(|| format!("{}: no field {tag} in {name}", path.display()))?;
        field.omits_zero = true;
    }
    Ok(())
}

/// Reads the Kubernetes Go types of the served packages and writes
/// `go-omitempty-fields.txt`: every scalar, non-repeated field of the schema whose Go field
/// is not a pointer and has `omitempty` (matched by struct name, ignoring case, and
/// protobuf field number).
fn write_go_fields(args: &[String]) -> Result<(), String> {
    let mut roots: BTreeMap<&str, PathBuf> = BTreeMap::new();
    for arg in args {
        let (repo, dir) = arg
            .split_once('=')
            .ok_or_else(|| format!("expected REPO=DIR, got {arg:?}"))?;
        roots.insert(repo, PathBuf::from(dir));
    }
    let crates = locate_crates()?;
    let (k8s_pb_src, _) = crates.get("k8s-pb").ok_or("k8s-pb is not a dependency")?;
    let schema = read_schema(k8s_pb_src)?;
    let mut out = String::from(
        "# Fields Go's JSON leaves out when zero (non-pointer scalars with omitempty), by message\n\
         # and protobuf field number. Written by `generate-schema --go-fields`; do not edit.\n",
    );
    for &(dir, _) in PACKAGES {
        // api/core/v1 is k8s.io/api's core/v1; apimachinery/pkg/.. and metrics/pkg/.. are
        // those repositories' pkg/...
        let (repo, rest) = dir.split_once('/').ok_or("bad package dir")?;
        let root = roots
            .get(repo)
            .ok_or_else(|| format!("no --go-fields {repo}=DIR"))?;
        let package = format!("k8s.io.{}.", dir.replace('/', "."));
        let go_dir = root.join(rest);
        let entries = std::fs::read_dir(&go_dir)
            .map_err(|error| format!("reading {}: {error}", go_dir.display()))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                path.extension().is_some_and(|ext| ext == "go")
                    && !path.to_string_lossy().ends_with("_test.go")
            })
            .collect();
        files.sort();
        let mut omitted = BTreeSet::new();
        for file in files {
            let text = std::fs::read_to_string(&file)
                .map_err(|error| format!("reading {}: {error}", file.display()))?;
            omitted.extend(go_omitempty_scalars(&text));
        }
        for (name, message) in &schema.messages {
            let Some(type_name) = name.strip_prefix(&package) else {
                continue;
            };
            for field in &message.fields {
                let scalar = matches!(field.ty, FieldTy::Scalar(_));
                if scalar
                    && !field.repeated
                    && omitted.contains(&(type_name.to_lowercase(), field.tag))
                {
                    let _ = writeln!(out, "{name} {}", field.tag);
                }
            }
        }
    }
    let path = go_fields_file();
    std::fs::write(&path, out).map_err(|error| format!("writing {}: {error}", path.display()))
}

/// (lowercased struct name, protobuf field number) of every non-pointer field with
/// `omitempty` in a Go file: one field per line, as Kubernetes' types are written.
fn go_omitempty_scalars(text: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("type ")
            && let Some(name) = rest.strip_suffix("struct {").map(str::trim)
        {
            current = Some(name.to_lowercase());
            continue;
        }
        if trimmed == "}" {
            current = None;
            continue;
        }
        let Some(struct_name) = &current else {
            continue;
        };
        let Some((declaration, tags)) = trimmed.split_once('`') else {
            continue;
        };
        let words: Vec<&str> = declaration.split_whitespace().collect();
        let [_, go_type] = words.as_slice() else {
            continue;
        };
        let tag_value = |key: &str| {
            let start = tags.find(&format!("{key}:\""))? + key.len() + 2;
            let end = tags[start..].find('"')? + start;
            Some(&tags[start..end])
        };
        let (Some(json), Some(protobuf)) = (tag_value("json"), tag_value("protobuf")) else {
            continue;
        };
        let Some(number) = protobuf
            .split(',')
            .nth(1)
            .and_then(|number| number.parse().ok())
        else {
            continue;
        };
        if !go_type.starts_with('*') && json.split(',').any(|option| option == "omitempty") {
            out.push((struct_name.clone(), number));
        }
    }
    out
}

/// lowerCamelCase of prost's snake_case name: the JSON name, up to the case of acronyms.
fn lower_camel(rust_name: &str) -> String {
    let mut out = String::with_capacity(rust_name.len());
    for (index, word) in rust_name.split('_').enumerate() {
        let mut chars = word.chars();
        if index > 0
            && let Some(first) = chars.next()
        {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        } else {
            out.push_str(word);
        }
    }
    out
}

/// The property names of each k8s-openapi type of the served packages, by the full name of
/// the message of the same name (ignoring case): the names in its `deserialize_struct` call.
fn openapi_properties(
    schema: &Schema,
    openapi_src: &Path,
) -> Result<BTreeMap<String, Vec<String>>, String> {
    let mut properties = BTreeMap::new();
    for (name, module, openapi_name) in openapi_types(schema, openapi_src) {
        let file = openapi_src
            .join(K8S_OPENAPI_VERSION)
            .join(module.replace("::", "/"))
            .join(format!(
                "{}.rs",
                openapi_file_stem(
                    &openapi_src
                        .join(K8S_OPENAPI_VERSION)
                        .join(module.replace("::", "/")),
                    &openapi_name
                )?
            ));
        let text = std::fs::read_to_string(&file)
            .map_err(|error| format!("reading {}: {error}", file.display()))?;
        let Some(call) = text.find("deserialize_struct(") else {
            continue;
        };
        let Some(open) = text[call..].find("&[").map(|offset| call + offset) else {
            continue;
        };
        let Some(close) = text[open..].find(']').map(|offset| open + offset) else {
            continue;
        };
        let names: Vec<String> = text[open..close]
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect();
        properties.insert(name, names);
    }
    Ok(properties)
}

/// The file a k8s-openapi module re-exports a type from (`pub use self::pod::Pod;`).
fn openapi_file_stem(module_dir: &Path, type_name: &str) -> Result<String, String> {
    let text = std::fs::read_to_string(module_dir.join("mod.rs"))
        .map_err(|error| format!("reading {}: {error}", module_dir.display()))?;
    text.lines()
        .filter_map(|line| line.strip_prefix("pub use self::")?.strip_suffix(';'))
        .find_map(|path| {
            let (stem, name) = path.split_once("::")?;
            (name == type_name).then(|| stem.to_owned())
        })
        .ok_or_else(|| format!("k8s-openapi does not export {type_name}"))
}

/// Every message of a package whose k8s-openapi module re-exports a type of the same name,
/// ignoring case (prost spells some acronyms as words: `AwsElasticBlockStoreVolumeSource` is
/// `AWSElasticBlockStoreVolumeSource`): (message, k8s-openapi module path, type name).
fn openapi_types(schema: &Schema, openapi_src: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for &(dir, _) in PACKAGES {
        let path = openapi_src
            .join(K8S_OPENAPI_VERSION)
            .join(dir)
            .join("mod.rs");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let exported: BTreeMap<String, &str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("pub use self::")?.strip_suffix(';'))
            .filter_map(|path| path.rsplit("::").next())
            .map(|name| (name.to_lowercase(), name))
            .collect();
        let package = format!("k8s.io.{}.", dir.replace('/', "."));
        for name in schema.messages.keys() {
            let Some(type_name) = name.strip_prefix(&package) else {
                continue;
            };
            if OPENAPI_NOT_STRUCTS.contains(&name.as_str()) {
                continue;
            }
            if let Some(openapi_name) = exported.get(&type_name.to_lowercase()) {
                out.push((
                    name.clone(),
                    dir.replace('/', "::"),
                    (*openapi_name).to_owned(),
                ));
            }
        }
    }
    out
}

/// Gives every field its JSON name. Kubernetes' proto field names are its JSON names, but
/// prost's snake_case loses the case of acronyms (`hostIP` → `host_ip`), and a few proto
/// names differ from the JSON ones in case only (`aPIGroup` for `apiGroup`, `port` for
/// `Port`): where k8s-openapi has the type, the JSON name is its property of the same name
/// ignoring case; elsewhere (the metrics API, lists, apimachinery internals) lowerCamelCase.
/// A message-typed field that the k8s-openapi type lacks while it has all the fields of the
/// field's message is Go's embedded struct (`json:",inline"`): marked inline.
fn assign_json_names(
    schema: &mut Schema,
    properties: &BTreeMap<String, Vec<String>>,
) -> Result<(), String> {
    let folded = |name: &str| name.replace('_', "").to_lowercase();
    let has_property = |openapi: &[String], key: &str| {
        openapi
            .iter()
            .any(|property| property.to_lowercase() == key)
    };
    // First the embedded structs: they are found by their fields, and their fields are named
    // after the parent type's properties (an embedded struct has no k8s-openapi type).
    let mut inline: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut borrowed: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, message) in &schema.messages {
        let Some(openapi) = properties.get(name) else {
            continue;
        };
        for field in &message.fields {
            let FieldTy::Message(target) = &field.ty else {
                continue;
            };
            let Some(embedded) = schema.messages.get(target) else {
                continue;
            };
            if !has_property(openapi, &folded(&field.json))
                && !embedded.fields.is_empty()
                && embedded
                    .fields
                    .iter()
                    .all(|inner| has_property(openapi, &folded(&inner.json)))
            {
                inline.insert((name.clone(), field.tag));
                borrowed.insert(target.clone(), openapi.clone());
            }
        }
    }
    for (name, message) in &mut schema.messages {
        let openapi = properties.get(name).or_else(|| borrowed.get(name));
        for field in &mut message.fields {
            field.inline = inline.contains(&(name.clone(), field.tag));
            let key = folded(&field.json);
            field.json = openapi
                .and_then(|openapi| {
                    openapi
                        .iter()
                        .find(|property| property.to_lowercase() == key)
                })
                .cloned()
                .unwrap_or_else(|| lower_camel(&field.json));
        }
    }
    Ok(())
}

fn check_references(schema: &Schema) -> Result<(), String> {
    for (name, message) in &schema.messages {
        for field in &message.fields {
            if let FieldTy::Message(target) | FieldTy::MapMessage(target) = &field.ty {
                if !schema.messages.contains_key(target) {
                    return Err(format!(
                        "{name}.{}: {target} is not in a served package",
                        field.json
                    ));
                }
                if UNMAPPED_SPECIAL.contains(&target.as_str()) {
                    return Err(format!(
                        "{name}.{}: {target} has no JSON mapping here",
                        field.json
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A message that is a named string slice in Go: one field, `repeated string items = 1`.
fn is_string_list(message: &Message) -> bool {
    matches!(message.fields.as_slice(), [field] if field.json == "items"
        && field.tag == 1 && field.repeated && matches!(field.ty, FieldTy::Scalar("String")))
}

fn render(schema: &Schema, version: &str) -> Result<String, String> {
    let index: BTreeMap<&str, usize> = schema
        .messages
        .keys()
        .enumerate()
        .map(|(index, name)| (name.as_str(), index))
        .collect();
    let id = |name: &str| -> Result<usize, String> {
        index
            .get(name)
            .copied()
            .ok_or_else(|| format!("no message {name}"))
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// @generated by `cargo run -p berth-proto-gen --bin generate-schema` from k8s-pb {version}.\n\
         // Do not edit: change the generator (src/bin/generate-schema.rs) and run it.\n\n\
         use super::Special::*;\n\
         use super::Ty::*;\n\
         use super::{{Field, Kind, Message, MetaKind}};\n\n\
         /// An optional field.\n\
         const fn o(json: &'static str, tag: u32, ty: super::Ty) -> Field {{\n    \
         Field {{ json, tag, ty, repeated: false, inline: false, omits_zero: false }}\n}}\n\n\
         /// An optional field that Go's JSON leaves out when it is zero.\n\
         const fn z(json: &'static str, tag: u32, ty: super::Ty) -> Field {{\n    \
         Field {{ json, tag, ty, repeated: false, inline: false, omits_zero: true }}\n}}\n\n\
         /// A repeated field.\n\
         const fn r(json: &'static str, tag: u32, ty: super::Ty) -> Field {{\n    \
         Field {{ json, tag, ty, repeated: true, inline: false, omits_zero: false }}\n}}\n\n\
         /// An embedded Go struct: its fields are the parent's in JSON.\n\
         const fn i(json: &'static str, tag: u32, ty: super::Ty) -> Field {{\n    \
         Field {{ json, tag, ty, repeated: false, inline: true, omits_zero: false }}\n}}\n"
    );
    let _ = writeln!(
        out,
        "pub(super) static MESSAGES: [Message; {}] = [",
        schema.messages.len()
    );
    for (name, message) in &schema.messages {
        let special = SPECIAL
            .iter()
            .find(|(special_name, _)| special_name == name)
            .map(|(_, special)| *special)
            .unwrap_or(if is_string_list(message) {
                "StringList"
            } else {
                "None"
            });
        let _ = writeln!(out, "    // {}", id(name)?);
        let _ = writeln!(
            out,
            "    Message {{\n        name: {name:?},\n        special: {special},"
        );
        let _ = write!(out, "        fields: &[");
        for field in &message.fields {
            let ty = match &field.ty {
                FieldTy::Scalar(scalar) => (*scalar).to_owned(),
                FieldTy::Message(target) => format!("Message({})", id(target)?),
                FieldTy::MapString => "MapString".to_owned(),
                FieldTy::MapBytes => "MapBytes".to_owned(),
                FieldTy::MapMessage(target) => format!("MapMessage({})", id(target)?),
            };
            let constructor = match (field.inline, field.repeated, field.omits_zero) {
                (true, _, _) => "i",
                (false, true, _) => "r",
                (false, false, true) => "z",
                (false, false, false) => "o",
            };
            let _ = write!(
                out,
                "\n            {constructor}({:?}, {}, {ty}),",
                field.json, field.tag
            );
        }
        if !message.fields.is_empty() {
            out.push_str("\n        ");
        }
        out.push_str("],\n");
        let names: BTreeSet<&str> = message
            .fields
            .iter()
            .map(|field| field.json.as_str())
            .collect();
        if names.len() != message.fields.len() {
            return Err(format!("{name}: two fields with one JSON name"));
        }
        out.push_str("    },\n");
    }
    out.push_str("];\n\n");
    let _ = writeln!(
        out,
        "pub(super) static KINDS: [Kind; {}] = [",
        schema.kinds.len()
    );
    for ((api_version, kind), name) in &schema.kinds {
        let _ = writeln!(
            out,
            "    Kind {{ api_version: {api_version:?}, kind: {kind:?}, message: {} }},",
            id(name)?
        );
    }
    out.push_str("];\n\n");
    let mut meta_kinds: Vec<&str> = META_KINDS.to_vec();
    meta_kinds.sort_unstable();
    let _ = writeln!(
        out,
        "pub(super) static META_KINDS: [MetaKind; {}] = [",
        meta_kinds.len()
    );
    for kind in meta_kinds {
        let name = format!("k8s.io.apimachinery.pkg.apis.meta.v1.{kind}");
        let _ = writeln!(
            out,
            "    MetaKind {{ kind: {kind:?}, message: {} }},",
            id(&name)?
        );
    }
    out.push_str("];\n");
    Ok(out)
}
