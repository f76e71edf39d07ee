pub mod toleration;
pub mod validation;
