//! Kubernetes protobuf on the wire (placeholder while the codec is written).
pub mod schema;
