//! Generates berth-proto's schema table from the k8s-pb crate's prost bindings: the
//! `generate-schema` binary (see its doc comment). The crate has no library API; this file
//! exists so that the package has a documented root.
