pub mod toleration;
