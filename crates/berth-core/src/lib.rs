pub mod quantity;
pub mod toleration;
