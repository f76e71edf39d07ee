pub mod taint_spec;
pub mod toleration;
